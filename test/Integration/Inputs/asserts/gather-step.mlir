// An embedding lookup guarded as torch-mlir guards its gathers (cf.assert
// on the index inside the body of the generic), a shape assert at the
// function level, and a loss that reads the gathered rows:
// loss = sum_{b,s,d} wte[ids[b,s], d] * x[b,s,d]; d loss / d wte[v, d] =
// sum over the (b, s) with ids[b, s] = v of x[b, s, d].
func.func @step(%wte: tensor<16x4xf32>, %ids: tensor<6x5xi64>, %x: tensor<6x5x4xf32>) -> (tensor<f32>, tensor<16x4xf32>) {
  %c0i = arith.constant 0 : index
  %c6i = arith.constant 6 : index
  %rows = tensor.dim %ids, %c0i : tensor<6x5xi64>
  %same = arith.cmpi eq, %rows, %c6i : index
  cf.assert %same, "mismatching batch size"
  %loss, %gw = train.step params(%wte : tensor<16x4xf32>) batch(%ids, %x : tensor<6x5xi64>, tensor<6x5x4xf32>)
      attributes {microbatches = 1 : i64} -> tensor<f32> grads(tensor<16x4xf32>) {
  ^bb0(%pw: tensor<16x4xf32>, %bids: tensor<6x5xi64>, %bx: tensor<6x5x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x5x4xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, s, d) -> (b, s)>, affine_map<(b, s, d) -> (b, s, d)>, affine_map<(b, s, d) -> (b, s, d)>], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%bids, %bx : tensor<6x5xi64>, tensor<6x5x4xf32>) outs(%e : tensor<6x5x4xf32>) {
    ^bb0(%id: i64, %xv: f32, %o: f32):
      %c0 = arith.constant 0 : i64
      %c16 = arith.constant 16 : i64
      %ge = arith.cmpi sge, %id, %c0 : i64
      cf.assert %ge, "index must be larger or equal to 0"
      %lt = arith.cmpi slt, %id, %c16 : i64
      cf.assert %lt, "index must be smaller than dim size"
      %i = arith.index_cast %id : i64 to index
      %d = linalg.index 2 : index
      %w = tensor.extract %pw[%i, %d] : tensor<16x4xf32>
      %p = arith.mulf %w, %xv : f32
      linalg.yield %p : f32
    } -> tensor<6x5x4xf32>
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [affine_map<(b, s, d) -> (b, s, d)>, affine_map<(b, s, d) -> ()>], iterator_types = ["reduction", "reduction", "reduction"]}
        ins(%h : tensor<6x5x4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %acc, %v : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<16x4xf32>
}
