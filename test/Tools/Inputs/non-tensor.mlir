// Functions whose signature ga-run cannot exchange as .npy files.
func.func @scalar_arg(%a: f32, %x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @scalar_result(%x: tensor<4xf32>) -> f32 {
  %c = arith.constant 1.0 : f32
  return %c : f32
}
