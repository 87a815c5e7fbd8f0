// RUN: ga-opt %s --ga-fuse-elementwise | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
#row = affine_map<(i, j) -> (i)>

// The bias addition (single use, elementwise) is fused into the scaling
// that reads it: one generic computes both, with the same scalar ops.
// CHECK-LABEL: func.func @bias_then_scale(
// CHECK: linalg.matmul
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK-NEXT: arith.mulf
// CHECK: return %[[R]]
// CHECK-NOT: linalg.generic
func.func @bias_then_scale(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>, %z: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %m = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %biased = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<8x4xf32>, tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%biased : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %scaled : tensor<8x4xf32>
}

// Not fused: a reduction consumer (it would recompute the producer at every
// step of the reduction) and a producer with two users.
// CHECK-LABEL: func.func @not_fused(
// CHECK-COUNT-4: linalg.generic
func.func @not_fused(%x: tensor<8x4xf32>, %acc: tensor<8xf32>) -> (tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<8x4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<8x4xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%neg : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %sum, %neg, %twice : tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
