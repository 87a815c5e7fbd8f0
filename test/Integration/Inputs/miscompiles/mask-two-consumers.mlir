// Once a silent wrong answer at the default settings: ga-tile-and-vectorize turned
// the generic that writes an i1 mask into vector<8xi1> transfer_writes; after
// bufferization a <8 x i1> store writes one byte of packed bits into a
// memref<128xi1> that holds one byte per element, and the consumer that stays
// scalar (it reads through linalg.index) reads bytes that were never written.
// The mask has two consumers, so it is not fused away. Masks like this one
// (labels != -100, a causal tril, ~mask) are in every model that a front end
// such as torch-mlir produces.
//
// Run with labels = 102 valid entries and 26 entries of -100, v = all ones:
//   ga-run i1-mask-vectorize.mlir labels.npy v.npy --vectorize=false
//     result0 sums to 102 (correct)
//   ga-run i1-mask-vectorize.mlir labels.npy v.npy            (default)
//     result0 sums to 20-26, varying from run to run (wrong, exit 0)
// Make the inputs with NumPy:
//   l = np.arange(128) % 5; l[np.random.default_rng(0).permutation(128)[:26]] = -100
//   np.save("labels.npy", l.astype(np.int64)); np.save("v.npy", np.ones(128, np.float32))
#id = affine_map<(d0) -> (d0)>
func.func @main(%labels: tensor<128xi64>, %v: tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %ign = arith.constant -100 : i64
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<128xi1>
  %mask = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%labels : tensor<128xi64>) outs(%e1 : tensor<128xi1>) {
  ^bb0(%l: i64, %o: i1):
    %c = arith.cmpi ne, %l, %ign : i64
    linalg.yield %c : i1
  } -> tensor<128xi1>
  %e2 = tensor.empty() : tensor<128xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%mask : tensor<128xi1>) outs(%e2 : tensor<128xf32>) {
  ^bb0(%m: i1, %o: f32):
    %i = linalg.index 0 : index
    %x = tensor.extract %v[%i] : tensor<128xf32>
    %s = arith.select %m, %x, %zero : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  %e3 = tensor.empty() : tensor<128xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%mask, %v : tensor<128xi1>, tensor<128xf32>) outs(%e3 : tensor<128xf32>) {
  ^bb0(%m: i1, %x: f32, %o: f32):
    %s = arith.select %m, %zero, %x : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %r, %r2 : tensor<128xf32>, tensor<128xf32>
}
