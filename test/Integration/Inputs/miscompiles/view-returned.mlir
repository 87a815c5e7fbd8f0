// Views of arguments returned as they are (a collapse, an expansion) and a
// view of a view: the CPU and CUDA targets once left the clone that
// deallocation makes of them unlowered (an error in the translation to
// LLVM IR).
func.func @main(%a: tensor<3x4xf32>, %b: tensor<12xf32>) -> (tensor<12xf32>, tensor<2x6xf32>, tensor<4x3xf32>) {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<3x4xf32> into tensor<12xf32>
  %e = tensor.expand_shape %b [[0, 1]] output_shape [2, 6] : tensor<12xf32> into tensor<2x6xf32>
  %f = tensor.expand_shape %c [[0, 1]] output_shape [4, 3] : tensor<12xf32> into tensor<4x3xf32>
  return %c, %e, %f : tensor<12xf32>, tensor<2x6xf32>, tensor<4x3xf32>
}
