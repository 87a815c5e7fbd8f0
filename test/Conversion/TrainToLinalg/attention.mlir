// RUN: ga-opt %s --convert-train-to-linalg | FileCheck %s
// RUN: not ga-opt %s --ga-pipeline="attention-key-tile=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// NEGATIVE: ga-pipeline: attention-key-tile must be 0 (off) or positive, got -1

// train.attention and its gradient become loops over tiles of 2 of the 8
// keys whose tensors are at most [B, H, S, 2]: no [2, 3, 8, 8] scores. The
// values are checked by test/Integration/attention-ops.test.

// CHECK-LABEL: func.func @attention
// CHECK-NOT: tensor<2x3x8x8xf32>
// Forward: the running maximum, sum and output carried across the tiles.
// CHECK: %[[FWD:.+]]:3 = scf.for %[[T:.+]] = %{{.+}} to %c8 step %c2 iter_args({{.*}}) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x8x3x5xf32>)
// CHECK: tensor.extract_slice %{{.+}}[0, %[[T]], 0, 0] [2, 2, 3, 4] [1, 1, 1, 1] : tensor<2x8x3x4xf32> to tensor<2x2x3x4xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, %[[T]], 0, 0] [2, 2, 3, 5] [1, 1, 1, 1] : tensor<2x8x3x5xf32> to tensor<2x2x3x5xf32>
// The causal mask at the key's position in the whole sequence.
// CHECK: linalg.index 2
// CHECK: %[[J:.+]] = linalg.index 3
// CHECK: %[[KEY:.+]] = arith.addi %[[J]], %[[T]]
// CHECK: arith.cmpi ugt, %[[KEY]]
// CHECK: -> tensor<2x3x8x2xf32>
// CHECK: scf.yield
// After the tiles: out = acc / l, lse = m + log(l).
// CHECK: arith.divf
// CHECK: math.log
// Backward: dq carried, each tile's dk and dv inserted.
// CHECK: %[[BWD:.+]]:3 = scf.for %[[T2:.+]] = %{{.+}} to %c8{{.*}} step %c2{{.*}} iter_args({{.*}}) -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, %[[T2]], 0, 0] [2, 2, 3, 4] [1, 1, 1, 1] : tensor<2x2x3x4xf32> into tensor<2x8x3x4xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, %[[T2]], 0, 0] [2, 2, 3, 5] [1, 1, 1, 1] : tensor<2x2x3x5xf32> into tensor<2x8x3x5xf32>
// CHECK: return %{{.+}}, %[[BWD]]#0, %[[BWD]]#1, %[[BWD]]#2
// CHECK-NOT: tensor<2x3x8x8xf32>
func.func @attention(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x5xf32>, %do: tensor<2x8x3x5xf32>)
    -> (tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>) {
  %o, %lse = train.attention %q, %k, %v {scale = 0.5 : f64, causal, key_tile = 2 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>) -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>)
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64, causal, key_tile = 2 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>, tensor<2x8x3x5xf32>, tensor<2x3x8xf32>, tensor<2x8x3x5xf32>)
      -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
  return %o, %dq, %dk, %dv : tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>
}

// With a key mask: each generic that masks reads the mask's tile [B, 2] at
// (b, j); a key is hidden where it comes after the query or the mask is
// false; the backward pass's ds is zero where hidden.
// CHECK-LABEL: func.func @key_mask
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %c8 step %c2
// CHECK: %[[MT:.+]] = tensor.extract_slice %[[M:arg[0-9]+]][0, %[[T]]] [2, 2] [1, 1] : tensor<2x8xi1> to tensor<2x2xi1>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[MT]] : tensor<2x3x8x2xf32>, tensor<2x2xi1>)
// CHECK: arith.cmpi ugt
// CHECK: %[[UNSEEN:.+]] = arith.xori
// CHECK: %[[HIDE:.+]] = arith.ori %{{.+}}, %[[UNSEEN]]
// CHECK: arith.select %[[HIDE]]
// CHECK: scf.for %[[T2:.+]] = %{{.+}} to %c8{{.*}} step %c2
// CHECK: tensor.extract_slice %[[M]][0, %[[T2]]] [2, 2] [1, 1]
// CHECK: arith.mulf
// CHECK: arith.ori
// CHECK: arith.select %{{.+}}, %cst{{.*}}, %{{.+}} : f32
func.func @key_mask(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x5xf32>, %do: tensor<2x8x3x5xf32>, %m: tensor<2x8xi1>)
    -> (tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>) {
  %o, %lse = train.attention %q, %k, %v key_mask %m {scale = 0.5 : f64, causal, key_tile = 2 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>, tensor<2x8xi1>) -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>)
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do key_mask %m {scale = 0.5 : f64, causal, key_tile = 2 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>, tensor<2x8x3x5xf32>, tensor<2x3x8xf32>, tensor<2x8x3x5xf32>, tensor<2x8xi1>)
      -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
  return %o, %dq : tensor<2x8x3x5xf32>, tensor<2x8x3x4xf32>
}
