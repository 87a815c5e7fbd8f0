// The split's contracts hold when it runs alone.
//
// 1. A mean loss split without train-normalize-loss first: train-split-batch
//    normalizes it itself, so its output is the output of the two passes.
// RUN: ga-opt %s --train-split-batch > %t.alone.mlir
// RUN: ga-opt %s --train-normalize-loss --train-split-batch > %t.both.mlir
// RUN: diff %t.alone.mlir %t.both.mlir
// RUN: FileCheck %s --check-prefix=MEAN < %t.alone.mlir
//
// 2. train-check-decomposable says why a mean cannot be split as it stands.
// RUN: not ga-opt %s --train-check-decomposable -o /dev/null 2>&1 | FileCheck %s --check-prefix=REFUSE
//
// 3. The analysis never calls a mean a batch-sum.
// RUN: ga-opt %s --test-train-decomposability -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLASS

// MEAN-LABEL: func.func @mean
// MEAN: %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<8xi64>) outs(%{{.*}} : tensor<f32>)
// MEAN: train.accumulate microbatches = 2 {{.*}} globals(%[[COUNT]] : tensor<f32>)
// MEAN: train.cross_entropy sum
// MEAN: arith.divf
// MEAN-NOT: train.cross_entropy mean

// REFUSE: error: cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: this operation is a mean over the batch's tokens (reduction = mean): the micro-batch means do not add up to it; train-normalize-loss rewrites it into a sum divided by the global count of valid labels (train-split-batch does so itself)

// CLASS: remark: mixed, parameter-dependent
// CLASS: remark: mixed: is a mean over the batch's tokens

func.func @mean(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy mean %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
