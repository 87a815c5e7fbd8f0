// An i1 mask as a step argument (NumPy bool) and as a result: read by an
// elementwise consumer that vectorizes (select) and by a reduction (the
// masked row sums), and written whole (its negation).
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @main(%m: tensor<4x64xi1>, %x: tensor<4x64xf32>)
    -> (tensor<4x64xf32>, tensor<4xf32>, tensor<4x64xi1>) {
  %zero = arith.constant 0.0 : f32
  %true = arith.constant true
  %e = tensor.empty() : tensor<4x64xf32>
  %sel = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %x : tensor<4x64xi1>, tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%a: i1, %b: f32, %o: f32):
    %n = arith.negf %b : f32
    %s = arith.select %a, %b, %n : f32
    linalg.yield %s : f32
  } -> tensor<4x64xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m, %x : tensor<4x64xi1>, tensor<4x64xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: i1, %b: f32, %o: f32):
    %v = arith.select %a, %b, %zero : f32
    %s = arith.addf %o, %v : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %eb = tensor.empty() : tensor<4x64xi1>
  %not = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<4x64xi1>) outs(%eb : tensor<4x64xi1>) {
  ^bb0(%a: i1, %o: i1):
    %n = arith.xori %a, %true : i1
    linalg.yield %n : i1
  } -> tensor<4x64xi1>
  return %sel, %sum, %not : tensor<4x64xf32>, tensor<4xf32>, tensor<4x64xi1>
}
