// A small step whose schedule the tests fill in (sed replaces SCHEDULE):
// logits = x w, cross-entropy mean over the labels that are not -100.
func.func @step(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>)
    -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>)
      batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {SCHEDULE} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>)
        -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>)
        outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy mean %logits, %by ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
