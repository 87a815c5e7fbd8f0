// RUN: ga-opt %s --train-split-batch -split-input-file -verify-diagnostics

// Data parallelism is not generated yet: an error, not a silent schedule.
func.func @ranks(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  // expected-error @+1 {{train-split-batch: data_parallel = 2 is not supported by this build (micro-batches only)}}
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {data_parallel = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}

// -----

// An init that is neither tensor.empty, a fill nor a splat cannot be
// re-typed to a micro-batch.
func.func @init_from_input(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>, %c: tensor<8x3xf32>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %bias = arith.constant dense<[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]> : tensor<8x3xf32>
    // expected-error @+1 {{cannot split: the init of this operation does not come from tensor.empty, linalg.fill or a splat constant, so it cannot be re-typed to a micro-batch}}
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%bias : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
