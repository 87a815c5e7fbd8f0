// RUN: ga-opt %s --ga-tile-and-vectorize | FileCheck %s
// Generics whose outputs are indexed by a loop marked "reduction" are valid
// linalg; they keep their scalar loops (reproducers:
// shared/repro/tile-vectorize-*.mlir).
// CHECK-LABEL: func.func @ctx
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel", "parallel", "parallel", "reduction"]
func.func @ctx(%probs: tensor<8x2x16x16xf32>, %v: tensor<8x16x2x8xf32>,
               %init: tensor<8x16x2x8xf32>) -> tensor<8x16x2x8xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(b, i, h, d, j) -> (b, h, i, j)>,
                       affine_map<(b, i, h, d, j) -> (b, j, h, d)>,
                       affine_map<(b, i, h, d, j) -> (b, i, h, d)>],
      iterator_types = ["reduction", "parallel", "parallel", "parallel", "reduction"]}
      ins(%probs, %v : tensor<8x2x16x16xf32>, tensor<8x16x2x8xf32>)
      outs(%init : tensor<8x16x2x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %p = arith.mulf %in0, %in1 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16x2x8xf32>
  return %r : tensor<8x16x2x8xf32>
}

// CHECK-LABEL: func.func @row_sum
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction"]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @narrow(%x: tensor<4x12xf32>) -> tensor<4x12xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x12xf32>) outs(%x : tensor<4x12xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}
func.func @row_sum(%x: tensor<16x32xf32>, %init: tensor<16xf32>) -> tensor<16xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<16x32xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
