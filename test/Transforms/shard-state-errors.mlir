// RUN: ga-opt %s --train-shard-state -split-input-file -verify-diagnostics

// The functions below are what train-split-batch leaves (a step on 2 ranks
// whose gradients are all-reduced sums), reduced to what the pass reads.

// Stage 3 returns the rank's shard of each updated parameter: the new
// parameter may not be read by anything else.
func.func @stage3_new_param_read(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {train.data_parallel = 2 : i64, train.shard = 3 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  // expected-error @below {{'train.adamw' op train-shard-state: shard = 3 returns the rank's shard of the updated parameter, so the new parameter must only be returned by @stage3_new_param_read}}
  %nw, %nm, %nv = train.adamw %w, %s, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  %twice = arith.addf %nw, %nw : tensor<4xf32>
  return %nw, %nm, %nv, %twice : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Stage 3 holds one shard of each parameter: two updates of one parameter
// are refused.
func.func @stage3_two_updates(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %m2: tensor<4xf32>, %v2: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {train.data_parallel = 2 : i64, train.shard = 3 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  %s2 = train.all_reduce sum %g : tensor<4xf32>
  // expected-error @below {{'train.adamw' op train-shard-state: shard = 3 holds one shard per parameter; this parameter has another update}}
  %nw, %nm, %nv = train.adamw %w, %s, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  %nw2, %nm2, %nv2 = train.adamw %w, %s2, %m2, %v2, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return %nw, %nm, %nv, %nw2, %nm2, %nv2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A moment that something else reads: each rank holds only its shard.
func.func @moment_read(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {train.data_parallel = 2 : i64, train.shard = 1 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  // expected-error @below {{'train.adamw' op train-shard-state: the first moment must be an argument of @moment_read that only this update reads (each rank holds 1/2 of it)}}
  %nw, %nm, %nv = train.adamw %w, %s, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return %nw, %nm, %nv, %m : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A new moment used by more than the return.
func.func @new_moment_used(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) attributes {train.data_parallel = 2 : i64, train.shard = 1 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  // expected-error @below {{'train.adamw' op train-shard-state: the new second moment must only be returned by @new_moment_used (each rank holds 1/2 of it)}}
  %nw, %nm, %nv = train.adamw %w, %s, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  %n = train.global_norm %nv : tensor<4xf32> -> tensor<f32>
  return %nw, %nm, %nv, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// A parameter computed in the function.
func.func @computed_param(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {train.data_parallel = 2 : i64, train.shard = 1 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  %w2 = train.all_reduce sum %w : tensor<4xf32>
  // expected-error @below {{'train.adamw' op train-shard-state: shard = 1 keeps 1/2 of the state of parameters that are arguments of @computed_param; this update's parameter is computed in the function}}
  %nw, %nm, %nv = train.adamw %w2, %s, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return %nw, %nm, %nv : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Stage 2: a gradient that is also returned whole.
func.func @gradient_returned(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {train.data_parallel = 2 : i64, train.shard = 2 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  // expected-error @below {{'train.adamw' op train-shard-state: shard = 2 reduce-scatters the gradients that the updates read; this one is not a train.all_reduce sum that only this update reads}}
  %nw, %nm, %nv = train.adamw %w, %s, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return %nw, %nm, %nv, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Stage 2: a clip whose other input is not a sum across the ranks.
func.func @clip_mixed(%w: tensor<4xf32>, %g: tensor<4xf32>, %h: tensor<2xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) attributes {train.data_parallel = 2 : i64, train.shard = 2 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  // expected-error @below {{'train.clip_by_global_norm' op train-shard-state: shard = 2 clips the shards of the gradients, so every input must be a train.all_reduce sum that only the clip reads, and every output read by one sharded update only}}
  %c:2, %n = train.clip_by_global_norm %s, %h max_norm = 1.0 : tensor<4xf32>, tensor<2xf32> -> tensor<f32>
  %nw, %nm, %nv = train.adamw %w, %c#0, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return %nw, %nm, %nv, %c#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>
}

// -----

// A step asking for shards that train-split-batch has not split yet.
func.func @unsplit(%w: tensor<4xf32>, %x: tensor<8x4xf32>) -> tensor<f32> {
  // expected-error @below {{train-shard-state: the step's shard = 1 needs its ranks split first (run train-split-batch before this pass)}}
  %loss, %gw = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {data_parallel = 2 : i64, shard = 1 : i64} -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %e = tensor.empty() : tensor<f32>
    %l = linalg.dot ins(%pw, %pw : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<f32>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss : tensor<f32>
}

// -----

// One rank, or no stage: nothing to shard, nothing refused.
func.func @one_rank(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {train.shard = 2 : i64} {
  %nw, %nm, %nv = train.adamw %w, %g, %m, %v, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return %nw, %nm, %nv : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// SGD keeps no state to shard: a sharded step with it is refused, not run
// replicated.
func.func @sgd(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> tensor<4xf32> attributes {train.data_parallel = 2 : i64, train.shard = 3 : i64} {
  %s = train.all_reduce sum %g : tensor<4xf32>
  // expected-error @below {{'train.sgd' op train-shard-state: shard = 3 shards the state of train.adamw updates; a train.sgd update keeps none, and its parameter stays whole (use shard = 0 with SGD)}}
  %n = train.sgd %w, %s, %lr : tensor<4xf32>, tensor<f32>
  return %n : tensor<4xf32>
}
