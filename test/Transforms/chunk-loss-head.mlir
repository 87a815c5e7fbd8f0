// RUN: ga-opt %s --ga-chunk-loss-head=chunk-rows=3 --canonicalize --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not ga-opt %s --ga-chunk-loss-head=chunk-rows=0 --split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO

// RUN: not ga-opt %s --ga-pipeline="loss-chunk-rows=-1" --split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// ZERO: error: ga-chunk-loss-head: chunk-rows must be positive, got 0
// NEGATIVE: ga-pipeline: loss-chunk-rows must be 0 (off) or positive, got -1

// The LM head of 8 tokens, its summed loss, the loss's gradient and the
// two products that read it: with chunk-rows=3, four chunks of 2 rows (the
// largest divisor of 8 not above 3). The loss's scaling reads the loss
// before the scale that the gradient needs is computed: it moves after the
// loop. No [8, 6] tensor is left.

// CHECK-LABEL: func.func @head
// CHECK-NOT: tensor<8x6xf32>
// The hidden states' gradient is computed into the chunk's rows of its
// zero init (in place) and inserted back; the weight gradient continues
// its init.
// CHECK: %[[N:.*]] = linalg.generic
// CHECK: %[[S:.*]] = linalg.generic
// CHECK: %[[LOOP:.*]]:3 = scf.for %[[I:.*]] = %c0 to %c4 step %c1 iter_args(%[[L:.*]] = %{{.*}}, %[[DX:.*]] = %{{.*}}, %[[DW:.*]] = %{{.*}}) -> (tensor<f32>, tensor<8x4xf32>, tensor<4x6xf32>)
// CHECK:   %[[OFF:.*]] = arith.muli %[[I]], %c2
// CHECK:   %[[XC:.*]] = tensor.extract_slice %arg0[%[[OFF]], 0] [2, 4] [1, 1]
// CHECK:   %[[LOGITS:.*]] = linalg.matmul ins(%[[XC]], %arg1 : tensor<2x4xf32>, tensor<4x6xf32>) outs(%{{.*}} : tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK:   %[[YC:.*]] = tensor.extract_slice %arg2[%[[OFF]]] [2] [1]
// CHECK:   %[[LC:.*]] = train.cross_entropy sum %[[LOGITS]], %[[YC]] ignore_index = -100 : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<f32>
// CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[LC]] : tensor<f32>) outs(%[[L]] : tensor<f32>)
// CHECK:   %[[G:.*]] = train.cross_entropy_grad sum %[[LOGITS]], %[[YC]], %[[S]] ignore_index = -100 : (tensor<2x6xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x6xf32>
// CHECK:   %[[DXC:.*]] = tensor.extract_slice %[[DX]][%[[OFF]], 0] [2, 4] [1, 1]
// CHECK:   %[[PART:.*]] = linalg.matmul {{.*}} ins(%[[G]], %arg1 : tensor<2x6xf32>, tensor<4x6xf32>) outs(%[[DXC]] : tensor<2x4xf32>)
// CHECK:   %[[INS:.*]] = tensor.insert_slice %[[PART]] into %[[DX]][%[[OFF]], 0] [2, 4] [1, 1]
// CHECK:   %[[XC2:.*]] = tensor.extract_slice %arg0[%[[OFF]], 0] [2, 4] [1, 1]
// CHECK:   %[[W:.*]] = linalg.matmul {{.*}} ins(%[[XC2]], %[[G]] : tensor<2x4xf32>, tensor<2x6xf32>) outs(%[[DW]] : tensor<4x6xf32>)
// CHECK:   scf.yield %[[SUM]], %[[INS]], %[[W]]
// CHECK: %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#0, %[[N]]
// CHECK: return %[[SCALED]], %[[LOOP]]#1, %[[LOOP]]#2
func.func @head(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>, %y: tensor<8xi64>)
    -> (tensor<f32>, tensor<8x4xf32>, tensor<4x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %logits = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>)
      outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %n = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%y : tensor<8xi64>) outs(%z0 : tensor<f32>) {
  ^bb0(%label: i64, %acc: f32):
    %ignore = arith.constant -100 : i64
    %valid = arith.cmpi ne, %label, %ignore : i64
    %one = arith.constant 1.0 : f32
    %v = arith.select %valid, %one, %zero : f32
    %sum = arith.addf %acc, %v : f32
    linalg.yield %sum : f32
  } -> tensor<f32>
  %loss = train.cross_entropy sum %logits, %y ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>) -> tensor<f32>
  %scaled = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>],
                            iterator_types = []}
      ins(%loss, %n : tensor<f32>, tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%l: f32, %c: f32, %out: f32):
    %q = arith.divf %l, %c : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
                       iterator_types = []}
      ins(%n : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%c: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %q = arith.divf %one, %c : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  %g = train.cross_entropy_grad sum %logits, %y, %s ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x6xf32>
  %ex = tensor.empty() : tensor<8x4xf32>
  %zx = linalg.fill ins(%zero : f32) outs(%ex : tensor<8x4xf32>) -> tensor<8x4xf32>
  %dx = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%g, %w : tensor<8x6xf32>, tensor<4x6xf32>)
      outs(%zx : tensor<8x4xf32>) -> tensor<8x4xf32>
  %ew = tensor.empty() : tensor<4x6xf32>
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<4x6xf32>) -> tensor<4x6xf32>
  %dw = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %g : tensor<8x4xf32>, tensor<8x6xf32>)
      outs(%zw : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %scaled, %dx, %dw : tensor<f32>, tensor<8x4xf32>, tensor<4x6xf32>
}

// -----

// The logits are also read by something else (a metric): left as it is.

// CHECK-LABEL: func.func @read_elsewhere
// CHECK-NOT: scf.for
func.func @read_elsewhere(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>,
                          %y: tensor<8xi64>, %s: tensor<f32>)
    -> (tensor<f32>, tensor<4x6xf32>, tensor<8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %logits = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>)
      outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  %loss = train.cross_entropy sum %logits, %y ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>) -> tensor<f32>
  // expected-warning @below {{ga-chunk-loss-head: not chunked: the logits are read by more than the loss and its gradient}}
  %g = train.cross_entropy_grad sum %logits, %y, %s ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x6xf32>
  %ew = tensor.empty() : tensor<4x6xf32>
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<4x6xf32>) -> tensor<4x6xf32>
  %dw = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %g : tensor<8x4xf32>, tensor<8x6xf32>)
      outs(%zw : tensor<4x6xf32>) -> tensor<4x6xf32>
  %probe = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                           iterator_types = ["parallel", "parallel"]}
      ins(%logits : tensor<8x6xf32>) outs(%e : tensor<8x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<8x6xf32>
  return %loss, %dw, %probe : tensor<f32>, tensor<4x6xf32>, tensor<8x6xf32>
}

// -----

// A mean (not normalized into a sum): left as it is.

// CHECK-LABEL: func.func @mean
// CHECK-NOT: scf.for
func.func @mean(%logits: tensor<8x6xf32>, %y: tensor<8xi64>, %s: tensor<f32>)
    -> (tensor<f32>, tensor<8x6xf32>) {
  %loss = train.cross_entropy mean %logits, %y ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>) -> tensor<f32>
  // expected-warning @below {{ga-chunk-loss-head: not chunked: the loss is not a sum (run train-normalize-loss first)}}
  %g = train.cross_entropy_grad mean %logits, %y, %s ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x6xf32>
  return %loss, %g : tensor<f32>, tensor<8x6xf32>
}

// -----

// The gradient's product sums over its rows into a non-zero init: the
// carried init continues it (reduction); a parallel product into a
// non-zero init is refused.

// CHECK-LABEL: func.func @nonzero_parallel_init
// CHECK-NOT: scf.for
func.func @nonzero_parallel_init(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>,
                                 %y: tensor<8xi64>, %s: tensor<f32>,
                                 %init: tensor<8x4xf32>)
    -> (tensor<f32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %logits = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>)
      outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  %loss = train.cross_entropy sum %logits, %y ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>) -> tensor<f32>
  // expected-warning @below {{ga-chunk-loss-head: not chunked: 'linalg.matmul' computes the rows into an init that is not zero}}
  %g = train.cross_entropy_grad sum %logits, %y, %s ignore_index = -100
      : (tensor<8x6xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x6xf32>
  %dx = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%g, %w : tensor<8x6xf32>, tensor<4x6xf32>)
      outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %loss, %dx : tensor<f32>, tensor<8x4xf32>
}
