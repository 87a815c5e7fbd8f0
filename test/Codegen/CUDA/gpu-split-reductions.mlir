// RUN: ga-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions))' --verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions{min-threads=1024}))' --verify-diagnostics | FileCheck %s --check-prefix=FEW
// RUN: ga-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions{lanes=1}))' | FileCheck %s --check-prefix=NOLANES
// RUN: ga-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions{min-threads=16384}))' | FileCheck %s --check-prefix=ROWS
// RUN: not ga-opt %s --pass-pipeline='builtin.module(func.func(ga-gpu-split-reductions{min-threads=16384 min-chunk=0}))' 2>&1 | FileCheck %s --check-prefix=BAD
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

// The bias gradient of GPT-2 124M's MLP layer (3072 features, 4096 tokens):
// 64 chunks of 64 rows (196608 threads; at min-threads=16384 it was 4
// chunks of 1024 rows on 12288 threads, 0.39 ms per layer on an H200);
// with min-threads=1024, enough results already.
// CHECK-LABEL: func.func @wide_bias_grad
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [64, 64, 3072]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}} : tensor<64x64x3072xf32>) outs(%{{.*}} : tensor<64x3072xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%{{.*}} : tensor<64x3072xf32>) outs(%arg1 : tensor<3072xf32>)
// FEW-LABEL: func.func @wide_bias_grad
// FEW-NOT: tensor.expand_shape
// FEW: return
func.func @wide_bias_grad(%g: tensor<4096x3072xf32>, %b: tensor<3072xf32>) -> tensor<3072xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(r, j) -> (r, j)>, affine_map<(r, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<4096x3072xf32>) outs(%b : tensor<3072xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3072xf32>
  return %r : tensor<3072xf32>
}

// -----

// Left alone: enough results already (the row sums of 300000 rows of 300,
// not a multiple of the 32 lanes);
// a reduction whose length has no divisor in range (a prime); a dynamic
// size; a combiner splitReduction does not know (a product of sums).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @kept(%rows: tensor<300000x300xf32>, %s: tensor<300000xf32>,
                %p: tensor<1021x8xf32>, %q: tensor<8xf32>,
                %d: tensor<?x8xf32>, %g2: tensor<1024x8xf32>) -> (tensor<300000xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, r) -> (i, r)>, affine_map<(i, r) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%rows : tensor<300000x300xf32>) outs(%s : tensor<300000xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<300000xf32>
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
  return %0, %1, %2, %3 : tensor<300000xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
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

// -----

// Row reductions with many rows: 32 interleaved lanes per row. The row sum
// of a [16384, 1024] tensor reads it as [16384, 32, 32] (row, step, lane);
// the partial sums are [16384, 32] (row, lane) with the lane the innermost
// parallel loop; then each row's 32 partial sums in lane order. The
// cross-entropy's row maximum (from -inf) and its sum of exponentials,
// which also reads the maximum by row, split the same way (4096 rows are
// few enough for 4 chunks of at most 16384 threads too, but 32 lanes give
// more threads, and theirs read consecutive elements; the sum starts from
// an argument, not from a zero fill, so the two stay two passes). With
// lanes=1 both split in chunks as a column reduction would: the row sums in
// 16 of 64 elements, the row statistics in 64 of 500.
// CHECK-LABEL: func.func @row_sums
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [16384, 32, 32]
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<16384x32xf32>)
// CHECK: %[[PART:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] : tensor<16384x32x32xf32>) outs(%[[FILL]] : tensor<16384x32xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[PART]] : tensor<16384x32xf32>) outs(%arg1 : tensor<16384xf32>)
// CHECK: return %[[SUM]]
// NOLANES-LABEL: func.func @row_sums
// NOLANES: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [16384, 16, 64]
func.func @row_sums(%x: tensor<16384x1024xf32>, %s: tensor<16384xf32>) -> tensor<16384xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, r) -> (i, r)>, affine_map<(i, r) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16384x1024xf32>) outs(%s : tensor<16384xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %a, %acc : f32
    linalg.yield %y : f32
  } -> tensor<16384xf32>
  return %r : tensor<16384xf32>
}
// CHECK-LABEL: func.func @row_statistics
// CHECK-DAG: arith.constant 0xFF800000 : f32
// CHECK-DAG: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [4096, 1000, 32]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}} : tensor<4096x1000x32xf32>) outs(%{{.*}} : tensor<4096x32xf32>)
// CHECK: arith.maximumf
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4096x32xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %[[MAX]] : tensor<4096x1000x32xf32>, tensor<4096xf32>) outs(%{{.*}} : tensor<4096x32xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4096x32xf32>)
// NOLANES-LABEL: func.func @row_statistics
// NOLANES: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [4096, 64, 500]
func.func @row_statistics(%logits: tensor<4096x32000xf32>, %minf: tensor<4096xf32>, %zero: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %max = linalg.generic {indexing_maps = [affine_map<(i, v) -> (i, v)>, affine_map<(i, v) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<4096x32000xf32>) outs(%minf : tensor<4096xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %a, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4096xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, v) -> (i, v)>, affine_map<(i, v) -> (i)>, affine_map<(i, v) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%logits, %max : tensor<4096x32000xf32>, tensor<4096xf32>) outs(%zero : tensor<4096xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    %y = arith.addf %e, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4096xf32>
  return %max, %sum : tensor<4096xf32>, tensor<4096xf32>
}

// The cross-entropy's statistics as convert-train-to-linalg writes them
// (the maximum from a fill of -inf, the sum from a fill of 0): one pass of
// online pairs per lane over [4096, 1000, 32] (each lane's maximum and its
// sum rescaled to it), then the 32 lanes' pairs combined in lane order onto
// the maximum's init and a zero fill; both results come from the combining
// generic. With lanes=1, the two passes split in chunks as before.
// CHECK-LABEL: func.func @row_statistics_online
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [4096, 1000, 32]
// CHECK: %[[PM:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4096x32xf32>)
// CHECK: %[[PS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4096x32xf32>)
// CHECK: %[[PART:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] : tensor<4096x1000x32xf32>) outs(%[[PM]], %[[PS]] : tensor<4096x32xf32>, tensor<4096x32xf32>)
// CHECK-NEXT: ^bb0(%[[XV:.*]]: f32, %[[M:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT: %[[NEWM:.*]] = arith.maximumf %[[M]], %[[XV]] : f32
// CHECK-NEXT: %[[D1:.*]] = arith.subf %[[M]], %[[NEWM]] : f32
// CHECK-NEXT: %[[E1:.*]] = math.exp %[[D1]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[S]], %[[E1]] : f32
// CHECK-NEXT: %[[D2:.*]] = arith.subf %[[XV]], %[[NEWM]] : f32
// CHECK-NEXT: %[[E2:.*]] = math.exp %[[D2]] : f32
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[R]], %[[E2]] : f32
// CHECK-NEXT: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[NONE:.*]] = arith.cmpf oeq, %[[NEWM]], %[[NINF]] : f32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[NEWS:.*]] = arith.select %[[NONE]], %[[ZERO]], %[[SUM]] : f32
// CHECK-NEXT: linalg.yield %[[NEWM]], %[[NEWS]] : f32, f32
// CHECK: %[[SINIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4096xf32>)
// CHECK: %[[ALL:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[PART]]#0, %[[PART]]#1 : tensor<4096x32xf32>, tensor<4096x32xf32>) outs(%{{.*}}, %[[SINIT]] : tensor<4096xf32>, tensor<4096xf32>)
// CHECK: arith.maximumf
// CHECK-COUNT-2: math.exp
// CHECK: arith.select
// CHECK-NOT: linalg.generic
// CHECK: return %[[ALL]]#0, %[[ALL]]#1
// NOLANES-LABEL: func.func @row_statistics_online
// NOLANES: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [4096, 64, 500]
// NOLANES-NOT: arith.select
// NOLANES: return
func.func @row_statistics_online(%logits: tensor<4096x32000xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4096xf32>
  %minf = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<4096xf32>) -> tensor<4096xf32>
  %e1 = tensor.empty() : tensor<4096xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4096xf32>) -> tensor<4096xf32>
  %max = linalg.generic {indexing_maps = [affine_map<(i, v) -> (i, v)>, affine_map<(i, v) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<4096x32000xf32>) outs(%minf : tensor<4096xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %a, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4096xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, v) -> (i, v)>, affine_map<(i, v) -> (i)>, affine_map<(i, v) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%logits, %max : tensor<4096x32000xf32>, tensor<4096xf32>) outs(%zeros : tensor<4096xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    %y = arith.addf %e, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4096xf32>
  return %max, %sum : tensor<4096xf32>, tensor<4096xf32>
}

// -----

// The same statistics of bfloat16 rows (precision=bf16's logits), each
// body widening its element: one pass of online pairs, the element widened
// once in it.
// CHECK-LABEL: func.func @row_statistics_bf16
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [4096, 1000, 32] : tensor<4096x32000xbf16> into tensor<4096x1000x32xbf16>
// CHECK: %[[PART:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] : tensor<4096x1000x32xbf16>)
// CHECK-NEXT: ^bb0(%[[XV:.*]]: bf16, %[[M:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[XV]] : bf16 to f32
// CHECK-NEXT: arith.maximumf %[[M]], %[[W]] : f32
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[PART]]#0, %[[PART]]#1
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @row_statistics_bf16(%logits: tensor<4096x32000xbf16>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4096xf32>
  %minf = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<4096xf32>) -> tensor<4096xf32>
  %e1 = tensor.empty() : tensor<4096xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4096xf32>) -> tensor<4096xf32>
  %max = linalg.generic {indexing_maps = [affine_map<(i, v) -> (i, v)>, affine_map<(i, v) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<4096x32000xbf16>) outs(%minf : tensor<4096xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %w = arith.extf %a : bf16 to f32
    %y = arith.maximumf %w, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4096xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, v) -> (i, v)>, affine_map<(i, v) -> (i)>, affine_map<(i, v) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%logits, %max : tensor<4096x32000xbf16>, tensor<4096xf32>) outs(%zeros : tensor<4096xf32>) {
  ^bb0(%a: bf16, %m: f32, %acc: f32):
    %w = arith.extf %a : bf16 to f32
    %d = arith.subf %w, %m : f32
    %e = math.exp %d : f32
    %y = arith.addf %e, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4096xf32>
  return %max, %sum : tensor<4096xf32>, tensor<4096xf32>
}

// -----

// Not split in lanes: rows of 1000 elements (not a multiple of 32 lanes); a
// reduction over the rows' outer dimension, whose elements are not
// contiguous (a transposed input); a row of 128 elements, under
// min-length; a reduction whose output is indexed by the rows out of order.
// With min-threads=16384 their 20000 or 32768 results are enough and all
// four are left alone; with the default, all but the short rows split in
// chunks, as column sums do (10 of 100, 8 of 128, 8 of 64).
// ROWS-LABEL: func.func @rows_kept
// ROWS-NOT: tensor.expand_shape
// ROWS: return
// CHECK-LABEL: func.func @rows_kept
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [20000, 10, 100]
// CHECK: tensor.expand_shape %arg2 {{\[\[}}0, 1], [2]] output_shape [8, 128, 20000]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg4 : tensor<20000x128xf32>)
// CHECK: tensor.expand_shape %arg6 {{\[\[}}0], [1], [2, 3]] output_shape [128, 256, 8, 64]
func.func @rows_kept(%a: tensor<20000x1000xf32>, %sa: tensor<20000xf32>,
                     %t: tensor<1024x20000xf32>, %st: tensor<20000xf32>,
                     %c: tensor<20000x128xf32>, %sc: tensor<20000xf32>,
                     %d: tensor<128x256x512xf32>, %sd: tensor<256x128xf32>)
    -> (tensor<20000xf32>, tensor<20000xf32>, tensor<20000xf32>, tensor<256x128xf32>) {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, r) -> (i, r)>, affine_map<(i, r) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<20000x1000xf32>) outs(%sa : tensor<20000xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<20000xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, r) -> (r, i)>, affine_map<(i, r) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<1024x20000xf32>) outs(%st : tensor<20000xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<20000xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(i, r) -> (i, r)>, affine_map<(i, r) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%c : tensor<20000x128xf32>) outs(%sc : tensor<20000xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<20000xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(i, j, r) -> (i, j, r)>, affine_map<(i, j, r) -> (j, i)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%d : tensor<128x256x512xf32>) outs(%sd : tensor<256x128xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<256x128xf32>
  return %0, %1, %2, %3 : tensor<20000xf32>, tensor<20000xf32>, tensor<20000xf32>, tensor<256x128xf32>
}
