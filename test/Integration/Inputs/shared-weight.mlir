// One weight read by four matmuls (tanh between them) and a token
// cross-entropy: its gradient sums four contributions, which the split
// accumulates over micro-batches (shared_weight.py sets the schedule).
#id = affine_map<(i, j) -> (i, j)>
func.func @chain(%w: tensor<16x16xf32>, %x: tensor<32x16xf32>,
                 %labels: tensor<32xi64>) -> (tensor<f32>, tensor<16x16xf32>) {
  %loss, %gw = train.step params(%w : tensor<16x16xf32>)
      batch(%x, %labels : tensor<32x16xf32>, tensor<32xi64>)
      -> tensor<f32> grads(tensor<16x16xf32>) {
  ^bb0(%pw: tensor<16x16xf32>, %bx: tensor<32x16xf32>, %bl: tensor<32xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<32x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32x16xf32>) -> tensor<32x16xf32>
    %m1 = linalg.matmul ins(%bx, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m1 : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %m2 = linalg.matmul ins(%h1, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m2 : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %m3 = linalg.matmul ins(%h2, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m3 : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %logits = linalg.matmul ins(%h3, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %l, %n = train.cross_entropy mean %logits, %bl ignore_index = -100 : (tensor<32x16xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<16x16xf32>
}
