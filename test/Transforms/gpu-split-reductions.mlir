// RUN: ga-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions))' --verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions{min-threads=1024}))' --verify-diagnostics | FileCheck %s --check-prefix=FEW
// RUN: not ga-opt %s --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions{min-chunk=0}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: ga-gpu-split-reductions: min-threads must be at least 2 and min-chunk at least 1, got 16384 and 0

// A bias gradient, 128 column sums over 1024 rows: 32 chunks of 32 rows
// (the divisor nearest sqrt(1024)), the chunk dimension outermost in the
// partial sums (4096 threads), then the 32 partial sums onto the bias.
// With min-threads=1024, at most 8 chunks (1024 / 128) of 128 rows.
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [32, 32, 128]
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<32x128xf32>)
// CHECK: %[[PART:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] : tensor<32x32x128xf32>) outs(%[[FILL]] : tensor<32x128xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[PART]] : tensor<32x128xf32>) outs(%arg1 : tensor<128xf32>)
// CHECK: return %[[SUM]]
// FEW-LABEL: func.func @bias_grad
// FEW: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [8, 128, 128]
func.func @bias_grad(%g: tensor<1024x128xf32>, %b: tensor<128xf32>) -> tensor<128xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<1024x128xf32>) outs(%b : tensor<128xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %r : tensor<128xf32>
}

// -----

// A layer-norm gain gradient: two inputs, one indexed by the row only; both
// split along the rows. A maximum splits too, from -inf.
// CHECK-LABEL: func.func @gain_grad
// CHECK-DAG: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [32, 32, 128]
// CHECK-DAG: tensor.expand_shape %arg1 {{\[\[}}0, 1]] output_shape [32, 32]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]}
// CHECK-LABEL: func.func @column_max
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: arith.maximumf
func.func @gain_grad(%dy: tensor<1024x128xf32>, %rstd: tensor<1024xf32>, %b: tensor<128xf32>) -> tensor<128xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (r)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%dy, %rstd : tensor<1024x128xf32>, tensor<1024xf32>) outs(%b : tensor<128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %r : tensor<128xf32>
}
func.func @column_max(%g: tensor<256x64xf32>, %m: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<256x64xf32>) outs(%m : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// Left alone: enough results already (a softmax's row sums, 16384 rows);
// a reduction whose length has no divisor in range (a prime); a dynamic
// size; a combiner splitReduction does not know (a product of sums).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @kept(%rows: tensor<16384x64xf32>, %s: tensor<16384xf32>,
                %p: tensor<1021x8xf32>, %q: tensor<8xf32>,
                %d: tensor<?x8xf32>, %g2: tensor<1024x8xf32>) -> (tensor<16384xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, r) -> (i, r)>, affine_map<(i, r) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%rows : tensor<16384x64xf32>) outs(%s : tensor<16384xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<16384xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%p : tensor<1021x8xf32>) outs(%q : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%d : tensor<?x8xf32>) outs(%q : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%g2 : tensor<1024x8xf32>) outs(%q : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    %z = arith.mulf %y, %acc : f32
    linalg.yield %z : f32
  } -> tensor<8xf32>
  return %0, %1, %2, %3 : tensor<16384xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Left alone: a reduction over fewer than min-length (256) elements, such as
// the bias gradient of a batch of 128 tokens.
// CHECK-LABEL: func.func @short
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @short(%g: tensor<128x64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<128x64xf32>) outs(%b : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}
