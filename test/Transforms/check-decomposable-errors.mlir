// RUN: ga-opt %s --train-check-decomposable -split-input-file -verify-diagnostics

// Batch normalization: a mean over the batch of parameter-dependent values
// feeds per-example values.
#id = affine_map<(b, d) -> (b, d)>
#col = affine_map<(b, d) -> (d)>
#all = affine_map<(b) -> (b)>
#none = affine_map<(b) -> ()>
func.func @batch_norm(%w: tensor<4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%bx, %pw : tensor<8x4xf32>, tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<8x4xf32>
    %e4 = tensor.empty() : tensor<4xf32>
    %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
    %mu = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%h : tensor<8x4xf32>) outs(%z4 : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    // expected-error @+1 {{cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: this operation feeds a batch statistic that depends on the parameters into per-example values (like batch normalization): a split would compute the statistic per micro-batch}}
    %c = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%h, %mu : tensor<8x4xf32>, tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.subf %a, %b : f32
      %q = arith.mulf %s, %s : f32
      linalg.yield %q : f32
    } -> tensor<8x4xf32>
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [#id, affine_map<(b, d) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%c : tensor<8x4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4xf32>
}

// -----

// A maximum over the batch (as in a softmax across the batch).
#id = affine_map<(b, d) -> (b, d)>
#col = affine_map<(b, d) -> (d)>
func.func @max_over_batch(%w: tensor<4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {data_parallel = 2 : i64} -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %ninf = arith.constant -1.0e30 : f32
    %zero = arith.constant 0.0 : f32
    %e4 = tensor.empty() : tensor<4xf32>
    %z4 = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{cannot split this step into 2 rank(s) x 1 micro-batch(es) exactly: this operation reduces over the batch dimension with something other than a sum}}
    %mx = linalg.generic {indexing_maps = [#id, #col, #col], iterator_types = ["reduction", "parallel"]} ins(%bx, %pw : tensor<8x4xf32>, tensor<4xf32>) outs(%z4 : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.maximumf %o, %m : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> ()>], iterator_types = ["reduction"]} ins(%mx : tensor<4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4xf32>
}

// -----

// Dividing by a sum that depends on the parameters.
#id = affine_map<(b, d) -> (b, d)>
#col = affine_map<(b, d) -> (d)>
#s0 = affine_map<() -> ()>
func.func @divide_by_dependent_sum(%w: tensor<4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 4 : i64} -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id, #col, affine_map<(b, d) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%bx, %pw : tensor<8x4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %t = arith.addf %o, %m : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    %q = linalg.generic {indexing_maps = [#id, affine_map<(b, d) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%bx : tensor<8x4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.addf %o, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    // expected-error @+1 {{this operation divides by a batch-sum that depends on the parameters ('arith.divf'): a split would divide by each micro-batch's own sum}}
    %l = linalg.generic {indexing_maps = [#s0, #s0, #s0], iterator_types = []} ins(%q, %s : tensor<f32>, tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.divf %a, %b : f32
      linalg.yield %d : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4xf32>
}

// -----

// A regularizer added to the loss would be added once per micro-batch.
#s0 = affine_map<() -> ()>
func.func @regularizer(%w: tensor<8x3xf32>, %x: tensor<8x8xf32>, %y: tensor<8xi64>, %r: tensor<f32>) -> (tensor<f32>, tensor<8x3xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw = train.step params(%w : tensor<8x3xf32>) batch(%x, %y : tensor<8x8xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<8x3xf32>) {
  ^bb0(%pw: tensor<8x3xf32>, %bx: tensor<8x8xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x8xf32>, tensor<8x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %ce = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %sq = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%pw : tensor<8x3xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %a : f32
      %t = arith.addf %o, %m : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    // expected-error @+1 {{this operation adds a term that does not depend on the batch to a parameter-dependent batch-sum ('arith.addf'): a split would add it once per micro-batch}}
    %l = linalg.generic {indexing_maps = [#s0, #s0, #s0], iterator_types = []} ins(%ce, %sq : tensor<f32>, tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.addf %a, %b : f32
      linalg.yield %d : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<8x3xf32>
}

// -----

// Only part of the batch.
func.func @partial_slice(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    // expected-error @+1 {{this operation takes only part of the batch dimension: a micro-batch would take a different part}}
    %half = tensor.extract_slice %bx[0, 0] [4, 4] [1, 1] : tensor<8x4xf32> to tensor<4x4xf32>
    %yh = tensor.extract_slice %by[0] [4] [1] : tensor<8xi64> to tensor<4xi64>
    %init = tensor.empty() : tensor<4x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
    %logits = linalg.matmul ins(%half, %pw : tensor<4x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<4x3xf32>) -> tensor<4x3xf32>
    %l = train.cross_entropy sum %logits, %yh ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}

// -----

// The position within the batch.
#id = affine_map<(b, d) -> (b, d)>
#col = affine_map<(b, d) -> (d)>
func.func @batch_position(%w: tensor<4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    // expected-error @+1 {{this operation reads the position within the batch (linalg.index of the batch loop): a micro-batch sees other positions}}
    %l = linalg.generic {indexing_maps = [#id, #col, affine_map<(b, d) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%bx, %pw : tensor<8x4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %f = arith.sitofp %ii : i64 to f32
      %m = arith.mulf %a, %b : f32
      %m2 = arith.mulf %m, %f : f32
      %t = arith.addf %o, %m2 : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4xf32>
}
