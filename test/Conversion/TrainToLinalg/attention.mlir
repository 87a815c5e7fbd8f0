// RUN: ga-opt %s --convert-train-to-linalg | FileCheck %s
// RUN: not ga-opt %s --ga-pipeline="attention-key-tile=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// NEGATIVE: ga-pipeline: attention-key-tile must be 0 (off) or positive, got -1

// train.attention and its gradient become loops over tiles of 4 of the 8
// queries and 2 of the 8 keys whose tensors are at most [B, H, 4, 2]: no
// [2, 3, 8, 8] scores. The causal attention visits only the key tiles up to
// each query tile's last query, and, backward, the query tiles from the one
// that holds the key tile's first key. The values are checked by
// test/Integration/attention-ops.test.

// CHECK-LABEL: func.func @attention
// CHECK-NOT: tensor<2x3x8x8xf32>
// Forward: per query tile, the running maximum, sum and output carried
// across the key tiles before min(8, (q0 + 4 - 1 + 2) / 2 * 2).
// CHECK: %[[FWD:.+]]:2 = scf.for %[[Q0:.+]] = %{{.+}} to %c8 step %c4 iter_args({{.*}}) -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>)
// CHECK: tensor.extract_slice %{{.+}}[0, %[[Q0]], 0, 0] [2, 4, 3, 4] [1, 1, 1, 1] : tensor<2x8x3x4xf32> to tensor<2x4x3x4xf32>
// CHECK: %[[LAST:.+]] = arith.addi %[[Q0]], %c5
// CHECK: %[[TILES:.+]] = arith.divui %[[LAST]], %c2
// CHECK: %[[END:.+]] = arith.muli %[[TILES]], %c2
// CHECK: %[[BOUND:.+]] = arith.minui %[[END]], %c8
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %[[BOUND]] step %c2{{.*}} iter_args({{.*}}) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x4x3x5xf32>)
// CHECK: tensor.extract_slice %{{.+}}[0, %[[T]], 0, 0] [2, 2, 3, 4] [1, 1, 1, 1] : tensor<2x8x3x4xf32> to tensor<2x2x3x4xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, %[[T]], 0, 0] [2, 2, 3, 5] [1, 1, 1, 1] : tensor<2x8x3x5xf32> to tensor<2x2x3x5xf32>
// The causal mask at the query's and the key's positions in the sequence,
// as a [4, 2] bias tile (-inf after the query, else 0) that the tile's
// generics add to the scores: their bodies hold no linalg.index.
// CHECK: -> tensor<2x3x4x2xf32>
// CHECK: %[[BIAS:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<4x2xf32>)
// CHECK: %[[I:.+]] = linalg.index 0
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: %[[QUERY:.+]] = arith.addi %[[I]], %[[Q0]]
// CHECK: %[[KEY:.+]] = arith.addi %[[J]], %[[T]]
// CHECK: arith.cmpi ugt, %[[KEY]], %[[QUERY]]
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[BIAS]] : tensor<2x3x4x2xf32>, tensor<4x2xf32>)
// CHECK-NOT: linalg.index
// CHECK: scf.yield
// After the key tiles: out = acc / l, lse = m + log(l), written at q0.
// CHECK: arith.divf
// CHECK: math.log
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, %[[Q0]], 0, 0] [2, 4, 3, 5] [1, 1, 1, 1] : tensor<2x4x3x5xf32> into tensor<2x8x3x5xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, %[[Q0]]] [2, 3, 4] [1, 1, 1] : tensor<2x3x4xf32> into tensor<2x3x8xf32>
// Backward: per key tile, dk and dv summed over the query tiles from
// k0 / 4 * 4, dq's query tile updated in place, dk's and dv's tiles
// inserted.
// CHECK: %[[BWD:.+]]:3 = scf.for %[[K0:.+]] = %{{.+}} to %c8{{.*}} step %c2{{.*}} iter_args({{.*}}) -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
// CHECK: %[[FIRST:.+]] = arith.divui %[[K0]], %c4
// CHECK: %[[BEGIN:.+]] = arith.muli %[[FIRST]], %c4
// CHECK: %[[INNER:.+]]:3 = scf.for %[[Q1:.+]] = %[[BEGIN]] to %c8{{.*}} step %c4{{.*}} iter_args({{.*}}) -> (tensor<2x8x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x5xf32>)
// CHECK: tensor.extract_slice %{{.+}}[0, %[[Q1]], 0, 0] [2, 4, 3, 4] [1, 1, 1, 1] : tensor<2x8x3x4xf32> to tensor<2x4x3x4xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, %[[Q1]], 0, 0] [2, 4, 3, 4] [1, 1, 1, 1] : tensor<2x4x3x4xf32> into tensor<2x8x3x4xf32>
// CHECK: tensor.insert_slice %[[INNER]]#1 into %{{.+}}[0, %[[K0]], 0, 0] [2, 2, 3, 4] [1, 1, 1, 1] : tensor<2x2x3x4xf32> into tensor<2x8x3x4xf32>
// CHECK: tensor.insert_slice %[[INNER]]#2 into %{{.+}}[0, %[[K0]], 0, 0] [2, 2, 3, 5] [1, 1, 1, 1] : tensor<2x2x3x5xf32> into tensor<2x8x3x5xf32>
// CHECK: return %[[FWD]]#0, %[[BWD]]#0, %[[BWD]]#1, %[[BWD]]#2
// CHECK-NOT: tensor<2x3x8x8xf32>
func.func @attention(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x5xf32>, %do: tensor<2x8x3x5xf32>)
    -> (tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>) {
  %o, %lse = train.attention %q, %k, %v {scale = 0.5 : f64, causal, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>) -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>)
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64, causal, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>, tensor<2x8x3x5xf32>, tensor<2x3x8xf32>, tensor<2x8x3x5xf32>)
      -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
  return %o, %dq, %dk, %dv : tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>
}

// With a key mask: before the loops it becomes a float tensor, 1 where
// shown and 0 where hidden, whose tile [B, 2] at the key tile the masking
// generics read at (b, j); a key the mask hides scores masked_score, a key
// after the query -inf; the backward pass's ds is zero where either hides.
// CHECK-LABEL: func.func @key_mask
// CHECK-SAME: %[[M:arg[0-9]+]]: tensor<2x8xi1>)
// CHECK: %[[KEEP:.+]] = linalg.generic {{.*}} ins(%[[M]] : tensor<2x8xi1>) outs(%{{.+}} : tensor<2x8xf32>)
// CHECK: scf.for
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %{{.+}} step %c2
// CHECK: %[[KT:.+]] = tensor.extract_slice %[[KEEP]][0, %[[T]]] [2, 2] [1, 1] : tensor<2x8xf32> to tensor<2x2xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}}, %[[KT]] : tensor<2x3x4x2xf32>, tensor<4x2xf32>, tensor<2x2xf32>)
// CHECK: %[[UNSEEN:.+]] = arith.cmpf oeq
// CHECK: %[[MASKED:.+]] = arith.select %[[UNSEEN]], %cst{{.*}}, %{{.+}} : f32
// CHECK: arith.addf %[[MASKED]]
// CHECK: %[[KEEP2:.+]] = linalg.generic {{.*}} ins(%[[M]] : tensor<2x8xi1>) outs(%{{.+}} : tensor<2x8xf32>)
// CHECK: scf.for %[[T2:.+]] = %{{.+}} to %c8{{.*}} step %c2
// CHECK: tensor.extract_slice %[[KEEP2]][0, %[[T2]]] [2, 2] [1, 1]
// CHECK: arith.mulf
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf oeq
// CHECK: arith.ori
// CHECK: arith.select %{{.+}}, %cst{{.*}}, %{{.+}} : f32
func.func @key_mask(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x5xf32>, %do: tensor<2x8x3x5xf32>, %m: tensor<2x8xi1>)
    -> (tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>) {
  %o, %lse = train.attention %q, %k, %v key_mask %m {scale = 0.5 : f64, causal, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>, tensor<2x8xi1>) -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>)
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do key_mask %m {scale = 0.5 : f64, causal, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>, tensor<2x8x3x5xf32>, tensor<2x3x8xf32>, tensor<2x8x3x5xf32>, tensor<2x8xi1>)
      -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
  return %o, %dq : tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>
}
