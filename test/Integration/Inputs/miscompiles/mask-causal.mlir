// A causal mask (key j <= query i) written by a scalar generic (it reads
// linalg.index) and read by two consumers that vectorize: the masked
// scores and the count of visible keys per query.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @main(%x: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant -1.0e9 : f32
  %eb = tensor.empty() : tensor<16x32xi1>
  %mask = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%eb : tensor<16x32xi1>) {
  ^bb0(%o: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = arith.cmpi ule, %j, %i : index
    linalg.yield %c : i1
  } -> tensor<16x32xi1>
  %e = tensor.empty() : tensor<16x32xf32>
  %masked = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %x : tensor<16x32xi1>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%m: i1, %v: f32, %o: f32):
    %s = arith.select %m, %v, %ninf : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  %e16 = tensor.empty() : tensor<16xf32>
  %z16 = linalg.fill ins(%zero : f32) outs(%e16 : tensor<16xf32>) -> tensor<16xf32>
  %count = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%mask : tensor<16x32xi1>) outs(%z16 : tensor<16xf32>) {
  ^bb0(%m: i1, %o: f32):
    %v = arith.select %m, %one, %zero : f32
    %s = arith.addf %o, %v : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %masked, %count : tensor<16x32xf32>, tensor<16xf32>
}
