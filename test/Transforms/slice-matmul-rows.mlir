// RUN: ga-opt %s --ga-slice-matmul-rows --split-input-file | FileCheck %s

// The next-token loss's logits: the head applied to the hidden states of
// positions 0..S-2 only, into a fill of that size; the values are the same
// rows, bitwise.
// CHECK-LABEL: func.func @shifted_logits
// CHECK-SAME: (%[[H:.+]]: tensor<32x8xf32>, %[[W:.+]]: tensor<8x100xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[HE:.+]] = tensor.expand_shape %[[H]] {{\[\[}}0, 1], [2]] output_shape [4, 8, 8] : tensor<32x8xf32> into tensor<4x8x8xf32>
// CHECK: %[[HS:.+]] = tensor.extract_slice %[[HE]][0, 0, 0] [4, 7, 8] [1, 1, 1] : tensor<4x8x8xf32> to tensor<4x7x8xf32>
// CHECK: %[[HC:.+]] = tensor.collapse_shape %[[HS]] {{\[\[}}0, 1], [2]] : tensor<4x7x8xf32> into tensor<28x8xf32>
// CHECK: %[[E:.+]] = tensor.empty() : tensor<28x100xf32>
// CHECK: %[[F:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<28x100xf32>)
// CHECK: %[[L:.+]] = linalg.matmul ins(%[[HC]], %[[W]] : tensor<28x8xf32>, tensor<8x100xf32>) outs(%[[F]] : tensor<28x100xf32>)
// CHECK: %[[LE:.+]] = tensor.expand_shape %[[L]] {{\[\[}}0, 1], [2]] output_shape [4, 7, 100] : tensor<28x100xf32> into tensor<4x7x100xf32>
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[LE]]
// CHECK: return %[[FLAT]] : tensor<28x100xf32>
// CHECK-NOT: tensor<32x100xf32>
func.func @shifted_logits(%h: tensor<32x8xf32>, %w: tensor<8x100xf32>) -> tensor<28x100xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x100xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32x100xf32>) -> tensor<32x100xf32>
  %l = linalg.matmul ins(%h, %w : tensor<32x8xf32>, tensor<8x100xf32>)
      outs(%z : tensor<32x100xf32>) -> tensor<32x100xf32>
  %l3 = tensor.expand_shape %l [[0, 1], [2]] output_shape [4, 8, 100]
      : tensor<32x100xf32> into tensor<4x8x100xf32>
  %s = tensor.extract_slice %l3[0, 0, 0] [4, 7, 100] [1, 1, 1]
      : tensor<4x8x100xf32> to tensor<4x7x100xf32>
  %flat = tensor.collapse_shape %s [[0, 1], [2]]
      : tensor<4x7x100xf32> into tensor<28x100xf32>
  return %flat : tensor<28x100xf32>
}

// -----

// A 2-D slice of rows, into an init that is not a fill: the init's rows are
// sliced like the result's.
// CHECK-LABEL: func.func @rows_of_init
// CHECK-SAME: (%[[A:.+]]: tensor<10x4xf32>, %[[B:.+]]: tensor<4x6xf32>, %[[C:.+]]: tensor<10x6xf32>)
// CHECK-DAG: %[[AS:.+]] = tensor.extract_slice %[[A]][2, 0] [5, 4] [1, 1] : tensor<10x4xf32> to tensor<5x4xf32>
// CHECK-DAG: %[[CS:.+]] = tensor.extract_slice %[[C]][2, 0] [5, 6] [1, 1] : tensor<10x6xf32> to tensor<5x6xf32>
// CHECK: %[[M:.+]] = linalg.matmul ins(%[[AS]], %[[B]] : tensor<5x4xf32>, tensor<4x6xf32>) outs(%[[CS]] : tensor<5x6xf32>)
// CHECK: return %[[M]]
func.func @rows_of_init(%a: tensor<10x4xf32>, %b: tensor<4x6xf32>, %c: tensor<10x6xf32>) -> tensor<5x6xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<10x4xf32>, tensor<4x6xf32>)
      outs(%c : tensor<10x6xf32>) -> tensor<10x6xf32>
  %s = tensor.extract_slice %m[2, 0] [5, 6] [1, 1] : tensor<10x6xf32> to tensor<5x6xf32>
  return %s : tensor<5x6xf32>
}

// -----

// Left alone: a slice of columns, a strided slice, a result read twice, a
// transposed left operand.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.matmul {{.*}} -> tensor<10x6xf32>
// CHECK-NOT: linalg.matmul
func.func @kept(%a: tensor<10x4xf32>, %at: tensor<4x10xf32>, %b: tensor<4x6xf32>, %c: tensor<10x6xf32>)
    -> (tensor<10x3xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<10x6xf32>, tensor<5x6xf32>) {
  %m0 = linalg.matmul ins(%a, %b : tensor<10x4xf32>, tensor<4x6xf32>)
      outs(%c : tensor<10x6xf32>) -> tensor<10x6xf32>
  %cols = tensor.extract_slice %m0[0, 0] [10, 3] [1, 1] : tensor<10x6xf32> to tensor<10x3xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<10x4xf32>, tensor<4x6xf32>)
      outs(%c : tensor<10x6xf32>) -> tensor<10x6xf32>
  %strided = tensor.extract_slice %m1[0, 0] [5, 6] [2, 1] : tensor<10x6xf32> to tensor<5x6xf32>
  %m2 = linalg.matmul ins(%a, %b : tensor<10x4xf32>, tensor<4x6xf32>)
      outs(%c : tensor<10x6xf32>) -> tensor<10x6xf32>
  %twice = tensor.extract_slice %m2[0, 0] [5, 6] [1, 1] : tensor<10x6xf32> to tensor<5x6xf32>
  %m3 = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%at, %b : tensor<4x10xf32>, tensor<4x6xf32>)
      outs(%c : tensor<10x6xf32>) -> tensor<10x6xf32>
  %transposed = tensor.extract_slice %m3[0, 0] [5, 6] [1, 1] : tensor<10x6xf32> to tensor<5x6xf32>
  return %cols, %strided, %twice, %m2, %transposed
      : tensor<10x3xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<10x6xf32>, tensor<5x6xf32>
}
