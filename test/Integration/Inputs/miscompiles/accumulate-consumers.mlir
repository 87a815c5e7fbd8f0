// Producers that add into their init (`acc + g`, as train-differentiate
// writes a second adjoint contribution), each with one consumer: under a
// broadcast (each producer element read by 6 consumer iterations), under
// a reduction, and under a transpose (each read once). Every accumulation
// must run once per element it writes.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#t = affine_map<(i, j) -> (j, i)>
#v = affine_map<(i) -> (i)>
func.func @main(%a: tensor<8xf32>, %g: tensor<8xf32>, %x: tensor<8x6xf32>,
                %a2: tensor<8x6xf32>, %g2: tensor<8x6xf32>)
    -> (tensor<8x6xf32>, tensor<6xf32>, tensor<6x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %p = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%g : tensor<8xf32>) outs(%a : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x6xf32>
  %bcast = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %x : tensor<8xf32>, tensor<8x6xf32>) outs(%e : tensor<8x6xf32>) {
  ^bb0(%pv: f32, %xv: f32, %o: f32):
    %s = arith.mulf %pv, %xv : f32
    linalg.yield %s : f32
  } -> tensor<8x6xf32>
  %p2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g2 : tensor<8x6xf32>) outs(%a2 : tensor<8x6xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x6xf32>
  %q2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g2 : tensor<8x6xf32>) outs(%p2 : tensor<8x6xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x6xf32>
  %e6 = tensor.empty() : tensor<6xf32>
  %z6 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<6xf32>) -> tensor<6xf32>
  %colsum = linalg.generic {indexing_maps = [#t, #row], iterator_types = ["parallel", "reduction"]}
      ins(%q2 : tensor<8x6xf32>) outs(%z6 : tensor<6xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %o, %in : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  %p3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x6xf32>) outs(%a2 : tensor<8x6xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x6xf32>
  %et = tensor.empty() : tensor<6x8xf32>
  %tr = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p3 : tensor<8x6xf32>) outs(%et : tensor<6x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.mulf %in, %two : f32
    linalg.yield %s : f32
  } -> tensor<6x8xf32>
  return %bcast, %colsum, %tr : tensor<8x6xf32>, tensor<6xf32>, tensor<6x8xf32>
}
