// RUN: ga-opt %s --train-normalize-loss | FileCheck %s --check-prefix=NORM
// RUN: ga-opt %s --train-normalize-loss --train-split-batch | FileCheck %s --check-prefix=SPLIT
// RUN: ga-opt %s --train-normalize-loss --train-split-batch=naive=true | FileCheck %s --check-prefix=NAIVE
// RUN: ga-opt %s --train-normalize-loss --train-split-batch --train-differentiate --convert-train-to-linalg --train-lower-accumulate --canonicalize | FileCheck %s --check-prefix=LOOP
// RUN: ga-opt %s --train-normalize-loss --test-train-decomposability -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLASS

// The labels are shifted by one (the next-token labels of a language model):
// the count reads the shifted labels that the loss consumes, 8 x 4 of them.

// NORM-LABEL: func.func @shifted
// NORM: %[[YS:.*]] = tensor.extract_slice %{{.*}}[0, 1] [8, 4] [1, 1] : tensor<8x5xi64> to tensor<8x4xi64>
// NORM: %[[YF:.*]] = tensor.collapse_shape %[[YS]]
// NORM: %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[YF]] : tensor<32xi64>) outs(%{{.*}} : tensor<f32>)
// NORM: arith.cmpi ne
// NORM: %[[SUM:.*]] = train.cross_entropy sum %{{.*}}, %[[YF]] ignore_index = -100 : (tensor<32x3xf32>, tensor<32xi64>) -> tensor<f32>
// NORM: linalg.generic {{.*}} ins(%[[SUM]], %[[COUNT]] : tensor<f32>, tensor<f32>)
// NORM:   arith.maximumf
// NORM:   arith.divf
// NORM: arith.fptosi
// NORM-NOT: train.cross_entropy mean

// The count is computed once, before the micro-batches, from the full batch,
// and passed in as a global; the body is re-typed to 4 of the 8 examples.
// SPLIT-LABEL: func.func @shifted
// SPLIT-SAME: %[[W:[^:]*]]: tensor<4x3xf32>, %[[X:[^:]*]]: tensor<8x5x4xf32>, %[[Y:[^:]*]]: tensor<8x5xi64>
// SPLIT: tensor.extract_slice %[[Y]][0, 1] [8, 4] [1, 1] : tensor<8x5xi64> to tensor<8x4xi64>
// SPLIT: %[[COUNT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<32xi64>)
// SPLIT: %[[AUX:.*]] = linalg.generic {{.*}} ins(%[[COUNT]] : tensor<f32>) outs(%{{.*}} : tensor<i64>)
// SPLIT: %[[LOSS:.*]], %[[GRAD:.*]] = train.accumulate microbatches = 2 params(%[[W]] : tensor<4x3xf32>) batch(%[[X]], %[[Y]] : tensor<8x5x4xf32>, tensor<8x5xi64>) globals(%[[COUNT]] : tensor<f32>)
// SPLIT: ^bb0(%{{.*}}: tensor<4x3xf32>, %[[MX:.*]]: tensor<4x5x4xf32>, %[[MY:.*]]: tensor<4x5xi64>, %[[N:.*]]: tensor<f32>):
// SPLIT: tensor.extract_slice %[[MY]][0, 1] [4, 4] [1, 1] : tensor<4x5xi64> to tensor<4x4xi64>
// SPLIT: linalg.matmul {{.*}} -> tensor<16x3xf32>
// SPLIT: %[[S:.*]] = train.cross_entropy sum {{.*}} : (tensor<16x3xf32>, tensor<16xi64>) -> tensor<f32>
// SPLIT: %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[N]] : tensor<f32>, tensor<f32>)
// SPLIT: train.yield %[[L]] : tensor<f32>
// SPLIT: return %[[LOSS]], %[[GRAD]], %[[AUX]]

// Naive: each micro-batch counts its own labels; the sums are halved.
// NAIVE-LABEL: func.func @shifted
// NAIVE: train.accumulate microbatches = 2 params({{.*}}) batch({{.*}}) -> tensor<f32>
// NAIVE-NOT: globals
// NAIVE: ins(%{{.*}} : tensor<16xi64>) outs(%{{.*}} : tensor<f32>)
// NAIVE: train.yield
// NAIVE: arith.constant 5.000000e-01 : f32
// NAIVE: arith.mulf
// NAIVE: arith.constant 5.000000e-01 : f32
// NAIVE: arith.mulf

// After differentiation: one loop over the micro-batch slices; the
// gradient's matmul accumulates into the loop's running gradient (no
// separate buffer), and the loss is divided by the global count once, after
// the loop.
// LOOP-LABEL: func.func @shifted
// LOOP-SAME: %[[W:[^:]*]]: tensor<4x3xf32>, %[[X:[^:]*]]: tensor<8x5x4xf32>, %[[Y:[^:]*]]: tensor<8x5xi64>
// LOOP: %[[COUNT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<32xi64>)
// LOOP: %[[R:.*]]:2 = scf.for %[[I:.*]] = %c0 to %c2 step %c1 iter_args(%[[SUMACC:.*]] = %{{.*}}, %[[GACC:.*]] = %{{.*}}) -> (tensor<f32>, tensor<4x3xf32>)
// LOOP: tensor.extract_slice %[[X]][%{{.*}}, 0, 0] [4, 5, 4] [1, 1, 1]
// LOOP: tensor.extract_slice %[[Y]][%{{.*}}, 0] [4, 5] [1, 1]
// LOOP: %[[G:.*]] = linalg.matmul {{.*}} outs(%[[GACC]] : tensor<4x3xf32>)
// LOOP: scf.yield %{{.*}}, %[[G]]
// LOOP: %[[LOSS:.*]] = linalg.generic {{.*}} ins(%[[R]]#0, %[[COUNT]] : tensor<f32>, tensor<f32>)
// LOOP: arith.divf
// LOOP: return %[[LOSS]], %[[R]]#1

// The classes of the analysis: the count is a global batch-sum, the loss
// sum depends on the parameters.
// CLASS: remark: per-example (batch dimension 0)
// CLASS: remark: per-example (batch dimension 0), parameter-dependent
// CLASS: remark: batch-sum, global
// CLASS: remark: batch-sum, parameter-dependent

func.func @shifted(%w: tensor<4x3xf32>, %x: tensor<8x5x4xf32>, %y: tensor<8x5xi64>) -> (tensor<f32>, tensor<4x3xf32>, tensor<i64>) {
  %loss, %gw, %n = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x5x4xf32>, tensor<8x5xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<i64>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x5x4xf32>, %by: tensor<8x5xi64>):
    %zero = arith.constant 0.0 : f32
    %xs = tensor.extract_slice %bx[0, 0, 0] [8, 4, 4] [1, 1, 1] : tensor<8x5x4xf32> to tensor<8x4x4xf32>
    %xf = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<8x4x4xf32> into tensor<32x4xf32>
    %ys = tensor.extract_slice %by[0, 1] [8, 4] [1, 1] : tensor<8x5xi64> to tensor<8x4xi64>
    %yf = tensor.collapse_shape %ys [[0, 1]] : tensor<8x4xi64> into tensor<32xi64>
    %init = tensor.empty() : tensor<32x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<32x3xf32>) -> tensor<32x3xf32>
    %logits = linalg.matmul ins(%xf, %pw : tensor<32x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<32x3xf32>) -> tensor<32x3xf32>
    %l, %c = train.cross_entropy mean %logits, %yf ignore_index = -100 : (tensor<32x3xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %c : tensor<f32>, tensor<i64>
  }
  return %loss, %gw, %n : tensor<f32>, tensor<4x3xf32>, tensor<i64>
}
