// linear-ce.mlir with its arguments named (train.name), as ga-import names
// them.
func.func @linear_ce(%w: tensor<4x3xf32> {train.name = "fc.weight"}, %x: tensor<8x4xf32> {train.name = "x"},
                     %y: tensor<8xi64> {train.name = "labels"})
    -> (tensor<f32>, tensor<4x3xf32>, tensor<i64>) {
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
  return %loss, %g, %n : tensor<f32>, tensor<4x3xf32>, tensor<i64>
}
