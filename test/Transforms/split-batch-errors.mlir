// RUN: ga-opt %s --train-split-batch -split-input-file -verify-diagnostics

// A sum over the batch that starts from 1 (a count plus one): each of the
// ranks would add the 1, so the split over ranks is refused.
func.func @nonzero_init(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {data_parallel = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %s = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    %e = tensor.empty() : tensor<f32>
    %ones = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
    // expected-error @+1 {{cannot split over 2 ranks: this sum over the batch starts from an init that is not zero, which every rank would add}}
    %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%by : tensor<8xi64>) outs(%ones : tensor<f32>) {
    ^bb0(%label: i64, %count: f32):
      %ignore = arith.constant -100 : i64
      %valid = arith.cmpi ne, %label, %ignore : i64
      %v = arith.select %valid, %one, %zero : f32
      %sum = arith.addf %count, %v : f32
      linalg.yield %sum : f32
    } -> tensor<f32>
    %l = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%s, %n : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}

// -----

// One function runs on one number of ranks.
func.func @two_rank_counts(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<f32>) {
  %l2, %g2 = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {data_parallel = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  // expected-error @+1 {{data_parallel = 4 in a function that already runs on 2 ranks (another train.step): every step of a function must use the same number of ranks}}
  %l4, %g4 = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {data_parallel = 4 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %l2, %l4 : tensor<f32>, tensor<f32>
}

// -----

// An init that is neither tensor.empty, a fill, a splat nor a broadcast
// along the batch cannot be re-typed to a slice of the batch (a micro-batch or a rank's rows).
func.func @init_from_input(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>, %c: tensor<8x3xf32>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %bias = arith.constant dense<[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]> : tensor<8x3xf32>
    // expected-error @+1 {{cannot split: the init of this operation does not come from tensor.empty, linalg.fill, a splat constant or a broadcast along the batch, so it cannot be re-typed to a slice of the batch}}
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%bias : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}

// -----

// A count computed inside a checkpoint region: the sum over the rank's rows
// would have to be completed across the ranks inside the region.
func.func @count_in_region(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {data_parallel = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %s = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    %e = tensor.empty() : tensor<f32>
    // expected-error @+1 {{cannot split over 2 ranks: this operation sums over the batch inside its region, where the sum cannot be completed across ranks}}
    %n = train.checkpoint (%by : tensor<8xi64>) -> tensor<f32> {
    ^bb0(%labels: tensor<8xi64>):
      %z = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %e0 = tensor.empty() : tensor<f32>
      %zeros = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
      %c = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%labels : tensor<8xi64>) outs(%zeros : tensor<f32>) {
      ^bb0(%label: i64, %count: f32):
        %ignore = arith.constant -100 : i64
        %valid = arith.cmpi ne, %label, %ignore : i64
        %v = arith.select %valid, %one, %z : f32
        %sum = arith.addf %count, %v : f32
        linalg.yield %sum : f32
      } -> tensor<f32>
      train.yield %c : tensor<f32>
    }
    %l = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%s, %n : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}

// -----

// The batch's labels paired with logits that do not come from the batch (a
// parameter with as many rows as the batch): refused with the reason, not
// re-typed into an invalid cross-entropy.
func.func @labels_without_logits(%w: tensor<8x3xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<8x3xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw = train.step params(%w : tensor<8x3xf32>) batch(%y : tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<8x3xf32>) {
  ^bb0(%pw: tensor<8x3xf32>, %by: tensor<8xi64>):
    // expected-error @+1 {{cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: this operation pairs the batch's labels with logits that do not come from the batch: a micro-batch would take only some of the labels' rows but all of the logits' rows (or the reverse)}}
    %l = train.cross_entropy sum %pw, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<8x3xf32>
}

// -----

// An auxiliary output that keeps the batch dimension cannot be returned:
// the message is one sentence that says what can.
func.func @per_example_aux(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>, tensor<8x3xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw, %out = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<8x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    // expected-error @+1 {{cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: auxiliary output #0 is per-example (batch dimension 0), parameter-dependent: a split step can return only values that do not depend on the batch and sums over the batch (a count of valid tokens, the summed loss, a count of correct predictions), which it accumulates over the micro-batches and sums across the ranks}}
    train.yield %l, %logits : tensor<f32>, tensor<8x3xf32>
  }
  return %loss, %gw, %out : tensor<f32>, tensor<4x3xf32>, tensor<8x3xf32>
}

// -----


// Queries from the batch attending to keys that are parameters: a
// micro-batch would take only some of the keys' rows.
func.func @keys_not_from_batch(%w: tensor<2x2xf32>, %kv: tensor<4x4x1x2xf32>, %x: tensor<4x4x2xf32>, %y: tensor<4x4xi64>) -> (tensor<f32>, tensor<2x2xf32>, tensor<4x4x1x2xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %gw, %gkv = train.step params(%w, %kv : tensor<2x2xf32>, tensor<4x4x1x2xf32>) batch(%x, %y : tensor<4x4x2xf32>, tensor<4x4xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<2x2xf32>, tensor<4x4x1x2xf32>) {
  ^bb0(%pw: tensor<2x2xf32>, %pkv: tensor<4x4x1x2xf32>, %bx3: tensor<4x4x2xf32>, %by2: tensor<4x4xi64>):
    %bx = tensor.collapse_shape %bx3 [[0, 1], [2]] : tensor<4x4x2xf32> into tensor<16x2xf32>
    %by = tensor.collapse_shape %by2 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<16x2xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<16x2xf32>) -> tensor<16x2xf32>
    %h = linalg.matmul ins(%bx, %pw : tensor<16x2xf32>, tensor<2x2xf32>) outs(%acc : tensor<16x2xf32>) -> tensor<16x2xf32>
    %q = tensor.expand_shape %h [[0, 1], [2, 3]] output_shape [4, 4, 1, 2] : tensor<16x2xf32> into tensor<4x4x1x2xf32>
    // expected-error @below {{cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: this operation attends from the batch's examples to keys or values that do not come from the batch: a micro-batch would take only some of their rows}}
    %o, %lse = train.attention %q, %pkv, %pkv {scale = 0.5 : f64, causal}
        : (tensor<4x4x1x2xf32>, tensor<4x4x1x2xf32>, tensor<4x4x1x2xf32>) -> (tensor<4x4x1x2xf32>, tensor<4x1x4xf32>)
    %flat = tensor.collapse_shape %o [[0, 1], [2, 3]] : tensor<4x4x1x2xf32> into tensor<16x2xf32>
    %s = train.cross_entropy sum %flat, %by ignore_index = -100 : (tensor<16x2xf32>, tensor<16xi64>) -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %gw, %gkv : tensor<f32>, tensor<2x2xf32>, tensor<4x4x1x2xf32>
}
