// RUN: ga-opt %s --train-lower-accumulate -split-input-file -verify-diagnostics

// The contribution form: train-differentiate has not run.
func.func @not_differentiated(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  // expected-error @+1 {{'train.accumulate' op cannot be lowered before train-differentiate: its body yields contributions, not the next values of explicit accumulators}}
  %loss, %gw = train.accumulate microbatches = 2 params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<4x4xf32>, %by: tensor<4xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<4x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<4x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<4x3xf32>) -> tensor<4x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}

// -----

// The loop is lowered before convert-train-to-linalg (the wrong order):
// refused, since the cross-entropy lowered inside the loop later would not
// be in the micro-batch's order.
func.func @train_op_left(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>,
                         %z: tensor<f32>, %zw: tensor<4x3xf32>) -> (tensor<f32>, tensor<4x3xf32>) {
  // expected-error @+1 {{'train.accumulate' op cannot be lowered while its body holds 'train.cross_entropy': run convert-train-to-linalg first, so that every gradient and metric is accumulated in place in the order of the full batch}}
  %loss, %gw = train.accumulate microbatches = 2 params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      accumulators(%z, %zw : tensor<f32>, tensor<4x3xf32>)
      -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<4x4xf32>, %by: tensor<4xi64>, %s: tensor<f32>, %gacc: tensor<4x3xf32>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<4x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<4x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<4x3xf32>) -> tensor<4x3xf32>
    // expected-note @+1 {{the operation still to lower}}
    %l = train.cross_entropy sum %logits, %by init(%s) ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %g = train.cross_entropy_grad sum %logits, %by, %one ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
    %gw_ = linalg.matmul ins(%bx, %g : tensor<4x4xf32>, tensor<4x3xf32>) outs(%gacc : tensor<4x3xf32>) -> tensor<4x3xf32>
    train.yield %l, %gw_ : tensor<f32>, tensor<4x3xf32>
  } finalize {
  ^bb0(%s: tensor<f32>, %gacc: tensor<4x3xf32>, %pw: tensor<4x3xf32>):
    train.yield %s, %gacc : tensor<f32>, tensor<4x3xf32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
