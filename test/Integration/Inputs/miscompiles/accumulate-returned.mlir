// A result computed into its argument (acc + g, the init read by the body)
// and returned: the CUDA target once left the clone that deallocation
// makes of it unlowered (an error in the translation to LLVM IR).
func.func @main(%acc: tensor<5x3xf32>, %g: tensor<5x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>) {
  %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<5x3xf32>) outs(%acc : tensor<5x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %o, %in : f32
    linalg.yield %s : f32
  } -> tensor<5x3xf32>
  %e = tensor.empty() : tensor<5x3xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<5x3xf32>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<5x3xf32>
  return %p, %q : tensor<5x3xf32>, tensor<5x3xf32>
}
