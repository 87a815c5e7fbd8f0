// RUN: ga-opt --train-record-signatures %s | FileCheck %s

// A step's loss and gradient results are recorded next to the signature;
// a function without a step gets the signature only; declarations nothing.

// CHECK-LABEL: func.func @step
// CHECK-SAME: attributes {train.gradient_results = array<i64: 2>, train.loss_result = 1 : i64, train.signature = (tensor<4x3xf32>, tensor<8x4xf32>, tensor<8xi64>) -> (tensor<i64>, tensor<f32>, tensor<4x3xf32>)}
func.func @step(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>)
    -> (tensor<i64>, tensor<f32>, tensor<4x3xf32>) {
  %loss, %g, %n = train.step params(%w : tensor<4x3xf32>)
      batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<i64>) {
  ^bb0(%w_: tensor<4x3xf32>, %x_: tensor<8x4xf32>, %y_: tensor<8xi64>):
    %init = tensor.empty() : tensor<8x3xf32>
    %zero = arith.constant 0.0 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>)
        -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%x_, %w_ : tensor<8x4xf32>, tensor<4x3xf32>)
        outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l, %c = train.cross_entropy mean %logits, %y_ ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %c : tensor<f32>, tensor<i64>
  }
  return %n, %loss, %g : tensor<i64>, tensor<f32>, tensor<4x3xf32>
}

// The arguments' names (train.name) are recorded on the function too, ""
// for an unnamed one: the lowering drops argument attributes.
// CHECK-LABEL: func.func @named
// CHECK-SAME: train.argument_names = ["fc.weight", "", "labels"]
func.func @named(%w: tensor<4x3xf32> {train.name = "fc.weight"}, %x: tensor<8x4xf32>,
                 %y: tensor<8xi64> {train.name = "labels"}) -> tensor<4x3xf32> {
  return %w : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @plain
// CHECK-NOT: train.argument_names
// CHECK-SAME: attributes {train.signature = (tensor<4xf32>) -> tensor<4xf32>}
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// CHECK: func.func private @external(tensor<4xf32>){{$}}
func.func private @external(tensor<4xf32>)
