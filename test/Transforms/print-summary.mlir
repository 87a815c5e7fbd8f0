// RUN: ga-opt %s --train-print-summary -o /dev/null | FileCheck %s
// RUN: ga-opt %s --train-print-summary | FileCheck %s --check-prefix=IR
// RUN: ga-opt %S/inline-checkpoints.mlir --split-input-file --train-print-summary -o /dev/null | FileCheck %s --check-prefix=NONE

// CHECK: train.step at {{.*}}print-summary.mlir:[[# @LINE + 21]]:{{[0-9]+}} (in @step)
// CHECK-NEXT: schedule:   microbatches = 2, data_parallel = 2 (global batch 8, 2 examples per micro-batch and rank)
// CHECK-NEXT: parameters: 2 tensor(s), 15 trainable values
// CHECK-NEXT: #0  tensor<4x3xf32>
// CHECK-NEXT: #1  tensor<3xf32>
// CHECK-NEXT: batch:      2 operand(s)
// CHECK-NEXT: #0  tensor<8x4xf32>
// CHECK-NEXT: #1  tensor<8xi64>
// CHECK-NEXT: loss:       train.cross_entropy mean (ignore_index = -100) over tensor<8x3xf32> at {{.*}}print-summary.mlir:[[# @LINE + 29]]:
// CHECK-NEXT: auxiliary:  tensor<i64>
// CHECK-NEXT: body:       7 operations: 1 arith.constant, 1 linalg.fill, 1 linalg.matmul, 1 math.tanh, 1 tensor.empty, 1 train.checkpoint, 1 train.cross_entropy

// The IR is unchanged.
// IR: train.checkpoint
// IR: train.cross_entropy

// NONE: no train.step found
// NONE: train.step at

func.func @step(%w: tensor<4x3xf32>, %b: tensor<3xf32>, %x: tensor<8x4xf32>,
                %y: tensor<8xi64>) -> tensor<f32> {
  %loss, %gw, %gb, %n = train.step params(%w, %b : tensor<4x3xf32>, tensor<3xf32>)
      batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64, data_parallel = 2 : i64}
      -> tensor<f32> grads(tensor<4x3xf32>, tensor<3xf32>) aux(tensor<i64>) {
  ^bb0(%w_: tensor<4x3xf32>, %b_: tensor<3xf32>, %x_: tensor<8x4xf32>, %y_: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>)
        -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%x_, %w_ : tensor<8x4xf32>, tensor<4x3xf32>)
        outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %t = train.checkpoint (%logits : tensor<8x3xf32>) -> tensor<8x3xf32> {
    ^bb0(%a: tensor<8x3xf32>):
      %r = math.tanh %a : tensor<8x3xf32>
      train.yield %r : tensor<8x3xf32>
    }
    %l, %c = train.cross_entropy mean %t, %y_ ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %c : tensor<f32>, tensor<i64>
  }
  return %loss : tensor<f32>
}
