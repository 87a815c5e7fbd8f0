// loss = sum_b per[b] / max_b per[b], per[b] = sum_s w[b,s] x[b,s]: the
// per-example losses summed and divided by the largest of them.
// d loss / d w[b,s] = (1/M - [b = argmax] S/M^2) x[b,s].
func.func @step(%w: tensor<8x6xf32>, %x: tensor<8x6xf32>) -> (tensor<f32>, tensor<8x6xf32>) {
  %loss, %gw = train.step params(%w : tensor<8x6xf32>) batch(%x : tensor<8x6xf32>)
      attributes {microbatches = 1 : i64} -> tensor<f32> grads(tensor<8x6xf32>) {
  ^bb0(%pw: tensor<8x6xf32>, %bx: tensor<8x6xf32>):
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x6xf32>
    %p = linalg.generic {indexing_maps = [affine_map<(b, s) -> (b, s)>, affine_map<(b, s) -> (b, s)>, affine_map<(b, s) -> (b, s)>], iterator_types = ["parallel", "parallel"]}
        ins(%pw, %bx : tensor<8x6xf32>, tensor<8x6xf32>) outs(%e : tensor<8x6xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %s = arith.mulf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<8x6xf32>
    %e8 = tensor.empty() : tensor<8xf32>
    %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
    %per = linalg.generic {indexing_maps = [affine_map<(b, s) -> (b, s)>, affine_map<(b, s) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%p : tensor<8x6xf32>) outs(%z8 : tensor<8xf32>) {
    ^bb0(%l: f32, %acc: f32):
      %s = arith.addf %acc, %l : f32
      linalg.yield %s : f32
    } -> tensor<8xf32>
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %total = linalg.generic {indexing_maps = [affine_map<(b) -> (b)>, affine_map<(b) -> ()>], iterator_types = ["reduction"]}
        ins(%per : tensor<8xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %acc, %v : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %mx = linalg.generic {indexing_maps = [affine_map<(b) -> (b)>, affine_map<(b) -> ()>], iterator_types = ["reduction"]}
        ins(%per : tensor<8xf32>) outs(%m0 : tensor<f32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.maximumf %acc, %v : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    %l = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%total, %mx : tensor<f32>, tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%t: f32, %m: f32, %o: f32):
      %q = arith.divf %t, %m : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<8x6xf32>
}
