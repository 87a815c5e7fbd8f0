// A parameter-dependent batch-sum plus a constant: a split would add the
// constant once per micro-batch, so the step is refused, unless the
// constant is zero (Python's sum() of losses starts from 0), which a split
// may add any number of times.
// RUN: ga-opt %s --split-input-file --verify-diagnostics --train-check-decomposable --mlir-print-op-on-diagnostic=false -o /dev/null

#id2 = affine_map<(i, j) -> (i, j)>
#to0 = affine_map<(i, j) -> ()>
#s = affine_map<() -> ()>
func.func @plus_zero(%w: tensor<4x4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) {
  %loss, %g = train.step params(%w : tensor<4x4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x4xf32>) {
  ^bb0(%pw: tensor<4x4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %o = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%o : tensor<8x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    %l = linalg.generic {indexing_maps = [#s, #s], iterator_types = []}
        ins(%sum : tensor<f32>) outs(%es : tensor<f32>) {
    ^bb0(%a: f32, %out: f32):
      %q = arith.addf %zero, %a : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x4xf32>
}

// -----

#id2 = affine_map<(i, j) -> (i, j)>
#to0 = affine_map<(i, j) -> ()>
#s = affine_map<() -> ()>
func.func @plus_one(%w: tensor<4x4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %g = train.step params(%w : tensor<4x4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x4xf32>) {
  ^bb0(%pw: tensor<4x4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %o = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%o : tensor<8x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    // expected-error @below {{cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: this operation adds a term that does not depend on the batch to a parameter-dependent batch-sum ('arith.addf'): a split would add it once per micro-batch}}
    %l = linalg.generic {indexing_maps = [#s, #s], iterator_types = []}
        ins(%sum : tensor<f32>) outs(%es : tensor<f32>) {
    ^bb0(%a: f32, %out: f32):
      %q = arith.addf %one, %a : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x4xf32>
}
