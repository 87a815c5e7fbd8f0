// RUN: ga-opt %s -split-input-file -verify-diagnostics

// Every error path of the train dialect's verifiers, one case each.

//===----------------------------------------------------------------------===//
// train.step
//===----------------------------------------------------------------------===//

func.func @step_microbatches(%x: tensor<8x4xf32>) {
  // expected-error @below {{'train.step' op 'microbatches' must be >= 1, got 0}}
  %l = train.step batch(%x : tensor<8x4xf32>) attributes {microbatches = 0 : i64} -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_data_parallel(%x: tensor<8x4xf32>) {
  // expected-error @below {{'data_parallel' must be >= 1, got -2}}
  %l = train.step batch(%x : tensor<8x4xf32>) attributes {data_parallel = -2 : i64} -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_split_overflow(%x: tensor<8x4xf32>) {
  // expected-error @below {{microbatches * data_parallel overflows}}
  %l = train.step batch(%x : tensor<8x4xf32>) attributes {microbatches = 4611686018427387904 : i64, data_parallel = 4 : i64} -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_int_param(%w: tensor<4xi32>) {
  // expected-error @below {{parameter #0 must be a float tensor (only float values have gradients), got 'tensor<4xi32>'}}
  %l, %g = train.step params(%w : tensor<4xi32>) -> tensor<f32> grads(tensor<4xi32>) {
  ^bb0(%a: tensor<4xi32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_rank0_batch(%x: tensor<f32>) {
  // expected-error @below {{batch operand #0 must have rank >= 1 (dimension 0 is the batch dimension), got 'tensor<f32>'}}
  %l = train.step batch(%x : tensor<f32>) -> tensor<f32> {
  ^bb0(%a: tensor<f32>):
    train.yield %a : tensor<f32>
  }
  return
}

// -----

func.func @step_dynamic_batch(%x: tensor<?x4xf32>) {
  // expected-error @below {{batch operand #0 has a dynamic batch dimension ('tensor<?x4xf32>'); the batch dimension must be static}}
  %l = train.step batch(%x : tensor<?x4xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<?x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_batch_mismatch(%x: tensor<8x4xf32>, %y: tensor<6xi64>) {
  // expected-error @below {{batch operand #1 has batch dimension 6, but batch operand #0 has 8 (all batch operands share dimension 0)}}
  %l = train.step batch(%x, %y : tensor<8x4xf32>, tensor<6xi64>) -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>, %b: tensor<6xi64>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_not_divisible(%x: tensor<8x4xf32>) {
  // expected-error @below {{global batch size 8 is not divisible by microbatches * data_parallel = 6}}
  %l = train.step batch(%x : tensor<8x4xf32>) attributes {microbatches = 3 : i64, data_parallel = 2 : i64} -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_loss_not_scalar(%x: tensor<8x4xf32>) {
  // expected-error @below {{loss must be a 0-d float tensor, got 'tensor<8xf32>'}}
  %l = train.step batch(%x : tensor<8x4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<8xf32>
    train.yield %c : tensor<8xf32>
  }
  return
}

// -----

func.func @step_loss_int(%x: tensor<8x4xf32>) {
  // expected-error @below {{loss must be a 0-d float tensor, got 'tensor<i32>'}}
  %l = train.step batch(%x : tensor<8x4xf32>) -> tensor<i32> {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0> : tensor<i32>
    train.yield %c : tensor<i32>
  }
  return
}

// -----

func.func @step_missing_grad(%w: tensor<4xf32>, %v: tensor<3xf32>) {
  // expected-error @below {{expected one gradient per parameter: 2 parameter(s) but 1 gradient(s)}}
  %l, %g = train.step params(%w, %v : tensor<4xf32>, tensor<3xf32>) -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_grad_type(%w: tensor<4xf32>) {
  // expected-error @below {{gradient #0 has type 'tensor<4xf64>', but parameter #0 has type 'tensor<4xf32>'}}
  %l, %g = train.step params(%w : tensor<4xf32>) -> tensor<f32> grads(tensor<4xf64>) {
  ^bb0(%a: tensor<4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_arg_count(%w: tensor<4xf32>, %x: tensor<8x4xf32>) {
  // expected-error @below {{body must have 2 argument(s), got 1}}
  %l, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>) -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_arg_type(%w: tensor<4xf32>, %x: tensor<8x4xf32>) {
  // expected-error @below {{body argument #1 (batch operand #0) has type 'tensor<4x4xf32>', expected 'tensor<8x4xf32>'}}
  %l, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>) -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_param_arg_type(%w: tensor<4xf32>) {
  // expected-error @below {{body argument #0 (parameter #0) has type 'tensor<4xf16>', expected 'tensor<4xf32>'}}
  %l, %g = train.step params(%w : tensor<4xf32>) -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%a: tensor<4xf16>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_no_yield(%x: tensor<8x4xf32>) {
  // expected-error @below {{body must end with 'train.yield'}}
  %l = train.step batch(%x : tensor<8x4xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>):
    "llvm.unreachable"() : () -> ()
  }
  return
}

// -----

func.func @step_yield_count(%x: tensor<8x4xf32>) {
  // expected-error @below {{body yields 1 value(s), expected 2 (the loss, then each auxiliary result)}}
  %l, %n = train.step batch(%x : tensor<8x4xf32>) -> tensor<f32> aux(tensor<i64>) {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @step_yield_type(%x: tensor<8x4xf32>) {
  // expected-error @below {{body yields 'tensor<f64>' at position 0, expected 'tensor<f32>'}}
  %l = train.step batch(%x : tensor<8x4xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f64>
    train.yield %c : tensor<f64>
  }
  return
}

// -----

func.func @step_capture(%x: tensor<8x4xf32>, %c: tensor<f32>) {
  // expected-note @below {{required by region isolation constraints}}
  %l = train.step batch(%x : tensor<8x4xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<8x4xf32>):
    // expected-error @below {{using value defined outside the region}}
    train.yield %c : tensor<f32>
  }
  return
}

//===----------------------------------------------------------------------===//
// train.yield
//===----------------------------------------------------------------------===//

// -----

func.func @yield_outside(%c: tensor<f32>) {
  // expected-error @below {{'train.yield' op expects parent op to be one of 'train.step, train.checkpoint, train.accumulate'}}
  train.yield %c : tensor<f32>
}

//===----------------------------------------------------------------------===//
// train.cross_entropy
//===----------------------------------------------------------------------===//

// -----

func.func @ce_logits_rank(%l: tensor<4x5x6xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{logits must be a rank-2 float tensor [N, V], got 'tensor<4x5x6xf32>'}}
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5x6xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_logits_int(%l: tensor<4x5xi32>, %y: tensor<4xi64>) {
  // expected-error @below {{logits must be a rank-2 float tensor [N, V], got 'tensor<4x5xi32>'}}
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xi32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_labels_float(%l: tensor<4x5xf32>, %y: tensor<4xf32>) {
  // expected-error @below {{labels must be a rank-1 integer tensor [N], got 'tensor<4xf32>'}}
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @ce_labels_rank(%l: tensor<4x5xf32>, %y: tensor<2x2xi64>) {
  // expected-error @below {{labels must be a rank-1 integer tensor [N], got 'tensor<2x2xi64>'}}
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<2x2xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_n_mismatch(%l: tensor<4x5xf32>, %y: tensor<5xi64>) {
  // expected-error @below {{logits have N = 4 rows but labels have 5 elements}}
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<5xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_ignore_is_class(%l: tensor<4x5xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{ignore_index = 3 is a valid class index in [0, 5): real tokens of that class would be ignored}}
  %r = train.cross_entropy mean %l, %y ignore_index = 3 : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_none_shape(%l: tensor<4x5xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{with reduction = none the loss must be 'tensor<4xf32>', got 'tensor<f32>'}}
  %r = train.cross_entropy none %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_mean_shape(%l: tensor<4x5xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{with reduction = mean the loss must be 'tensor<f32>', got 'tensor<4xf32>'}}
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @ce_sum_element_type(%l: tensor<4x5xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{with reduction = sum the loss must be 'tensor<f32>', got 'tensor<f64>'}}
  %r = train.cross_entropy sum %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f64>
  return
}

// -----

func.func @ce_count_type(%l: tensor<4x5xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{the valid-token count must be a 0-d integer or float tensor, got 'tensor<1xi64>'}}
  %r, %n = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<1xi64>)
  return
}

// -----

func.func @ce_bad_reduction(%l: tensor<4x5xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{expected string or keyword containing one of the following enum values for attribute 'reduction' [none, sum, mean]}}
  %r = train.cross_entropy average %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// train.checkpoint
//===----------------------------------------------------------------------===//

// -----

func.func @checkpoint_arg_count(%x: tensor<4xf32>) {
  // expected-error @below {{'train.checkpoint' op body must have 1 argument(s), got 0}}
  %r = train.checkpoint (%x : tensor<4xf32>) -> tensor<4xf32> {
    %c = arith.constant dense<0.0> : tensor<4xf32>
    train.yield %c : tensor<4xf32>
  }
  return
}

// -----

func.func @checkpoint_arg_type(%x: tensor<4xf32>) {
  // expected-error @below {{body argument #0 (input #0) has type 'tensor<5xf32>', expected 'tensor<4xf32>'}}
  %r = train.checkpoint (%x : tensor<4xf32>) -> tensor<5xf32> {
  ^bb0(%a: tensor<5xf32>):
    train.yield %a : tensor<5xf32>
  }
  return
}

// -----

func.func @checkpoint_yield_count(%x: tensor<4xf32>) {
  // expected-error @below {{body yields 0 value(s), expected 1 (one per result)}}
  %r = train.checkpoint (%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    train.yield
  }
  return
}

// -----

func.func @checkpoint_yield_type(%x: tensor<4xf32>) {
  // expected-error @below {{body yields 'tensor<4xf32>' at position 0, expected 'tensor<4xf16>'}}
  %r = train.checkpoint (%x : tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: tensor<4xf32>):
    train.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @checkpoint_no_yield(%x: tensor<4xf32>) {
  // expected-error @below {{body must end with 'train.yield'}}
  train.checkpoint (%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    "llvm.unreachable"() : () -> ()
  }
  return
}

// -----

func.func @checkpoint_capture(%x: tensor<4xf32>) {
  // expected-note @below {{required by region isolation constraints}}
  %r = train.checkpoint -> tensor<4xf32> {
    // expected-error @below {{using value defined outside the region}}
    train.yield %x : tensor<4xf32>
  }
  return
}

//===----------------------------------------------------------------------===//
// train.accumulate
//===----------------------------------------------------------------------===//

// -----

func.func @acc_microbatches(%x: tensor<8x3xf32>) {
  // expected-error @below {{'train.accumulate' op 'microbatches' must be >= 1, got 0}}
  %l = train.accumulate microbatches = 0 batch(%x : tensor<8x3xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<8x3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_int_param(%w: tensor<3xi8>) {
  // expected-error @below {{parameter #0 must be a float tensor (only float values have gradients), got 'tensor<3xi8>'}}
  %l, %g = train.accumulate microbatches = 1 params(%w : tensor<3xi8>) -> tensor<f32> grads(tensor<3xi8>) {
  ^bb0(%a: tensor<3xi8>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_not_divisible(%x: tensor<8x3xf32>) {
  // expected-error @below {{global batch size 8 is not divisible by microbatches = 3}}
  %l = train.accumulate microbatches = 3 batch(%x : tensor<8x3xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<8x3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_grad_count(%w: tensor<3xf32>) {
  // expected-error @below {{expected one gradient per parameter: 1 parameter(s) but 0 gradient(s)}}
  %l = train.accumulate microbatches = 1 params(%w : tensor<3xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_slice_type(%x: tensor<8x3xf32>) {
  // expected-error @below {{body argument #0 (micro-batch slice of batch operand #0) has type 'tensor<8x3xf32>', expected 'tensor<4x3xf32>'}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<8x3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_global_type(%x: tensor<8x3xf32>, %n: tensor<f32>) {
  // expected-error @below {{body argument #1 (global #0) has type 'tensor<i64>', expected 'tensor<f32>'}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) globals(%n : tensor<f32>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>, %b: tensor<i64>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_yield_count(%w: tensor<3xf32>) {
  // expected-error @below {{body yields 3 value(s), expected 1 (the loss contribution) or 2 (the loss contribution and one gradient contribution per parameter)}}
  %l, %g = train.accumulate microbatches = 1 params(%w : tensor<3xf32>) -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%a: tensor<3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c, %a, %a : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  }
  return
}

// -----

func.func @acc_metrics_yield_count(%w: tensor<3xf32>) {
  // expected-error @below {{body yields 1 value(s), expected 2 (the loss contribution and 1 metric contribution(s)) or 3 (the loss contribution, one gradient contribution per parameter, then the metric contributions)}}
  %l, %g, %m = train.accumulate microbatches = 1 params(%w : tensor<3xf32>) -> tensor<f32> grads(tensor<3xf32>) metrics(tensor<i64>) {
  ^bb0(%a: tensor<3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_metric_type(%w: tensor<3xf32>) {
  // expected-error @below {{body yields 'tensor<f32>' at position 1, expected 'tensor<i64>'}}
  %l, %g, %m = train.accumulate microbatches = 1 params(%w : tensor<3xf32>) -> tensor<f32> grads(tensor<3xf32>) metrics(tensor<i64>) {
  ^bb0(%a: tensor<3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c, %c : tensor<f32>, tensor<f32>
  }
  return
}

// -----

func.func @acc_metric_element(%w: tensor<3xf32>) {
  // expected-error @below {{metric #0 needs an integer or float element type (it is accumulated by addition), got 'tensor<complex<f32>>'}}
  %l, %g, %m = train.accumulate microbatches = 1 params(%w : tensor<3xf32>) -> tensor<f32> grads(tensor<3xf32>) metrics(tensor<complex<f32>>) {
  ^bb0(%a: tensor<3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    %z = arith.constant dense<(0.0, 0.0)> : tensor<complex<f32>>
    train.yield %c, %z : tensor<f32>, tensor<complex<f32>>
  }
  return
}

// -----

func.func @acc_yield_grad_type(%w: tensor<3xf32>) {
  // expected-error @below {{body yields 'tensor<f32>' at position 1, expected 'tensor<3xf32>'}}
  %l, %g = train.accumulate microbatches = 1 params(%w : tensor<3xf32>) -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%a: tensor<3xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c, %c : tensor<f32>, tensor<f32>
  }
  return
}

// -----

func.func @acc_no_yield(%x: tensor<8x3xf32>) {
  // expected-error @below {{body must end with 'train.yield'}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>):
    "llvm.unreachable"() : () -> ()
  }
  return
}

// -----

func.func @acc_accumulators_without_finalize(%x: tensor<8x3xf32>, %z: tensor<f32>) {
  // expected-error @below {{has 1 accumulator(s) but no finalize region (the explicit form needs both)}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) accumulators(%z : tensor<f32>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>, %s: tensor<f32>):
    train.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @acc_explicit_yield(%x: tensor<8x3xf32>, %z: tensor<f32>) {
  // expected-error @below {{body yields 2 value(s), expected 1 (the next value of each accumulator)}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) accumulators(%z : tensor<f32>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>, %s: tensor<f32>):
    train.yield %s, %s : tensor<f32>, tensor<f32>
  } finalize {
  ^bb0(%s: tensor<f32>):
    train.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @acc_finalize_no_yield(%x: tensor<8x3xf32>, %z: tensor<f32>) {
  // expected-error @below {{finalize region must end with 'train.yield'}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) accumulators(%z : tensor<f32>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>, %s: tensor<f32>):
    train.yield %s : tensor<f32>
  } finalize {
  ^bb0(%s: tensor<f32>):
    "llvm.unreachable"() : () -> ()
  }
  return
}

// -----

func.func @acc_finalize_args(%x: tensor<8x3xf32>, %n: tensor<f32>, %z: tensor<f32>) {
  // expected-error @below {{finalize region must have 2 argument(s), got 1}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) globals(%n : tensor<f32>) accumulators(%z : tensor<f32>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>, %n_: tensor<f32>, %s: tensor<f32>):
    train.yield %s : tensor<f32>
  } finalize {
  ^bb0(%s: tensor<f32>):
    train.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @acc_finalize_arg_type(%x: tensor<8x3xf32>, %z: tensor<f32>) {
  // expected-error @below {{finalize region argument #0 (accumulator #0) has type 'tensor<f64>', expected 'tensor<f32>'}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) accumulators(%z : tensor<f32>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>, %s: tensor<f32>):
    train.yield %s : tensor<f32>
  } finalize {
  ^bb0(%s: tensor<f64>):
    %c = arith.constant dense<1.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @acc_finalize_results(%w: tensor<3xf32>, %x: tensor<8x3xf32>, %z: tensor<f32>) {
  %l, %g = train.accumulate microbatches = 2 params(%w : tensor<3xf32>) batch(%x : tensor<8x3xf32>) accumulators(%z : tensor<f32>) -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%w_: tensor<3xf32>, %a: tensor<4x3xf32>, %s: tensor<f32>):
    train.yield %s : tensor<f32>
  } finalize {
  ^bb0(%s: tensor<f32>, %w_: tensor<3xf32>):
    // expected-error @below {{yields 'tensor<f32>' from the finalize region, expected the op's result types 'tensor<f32>', 'tensor<3xf32>' (the loss, the gradients, then the metrics)}}
    train.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @acc_accumulator_type(%x: tensor<8x3xf32>, %z: tensor<complex<f32>>) {
  // expected-error @below {{accumulator #0 needs an integer or float element type (it is accumulated by addition), got 'tensor<complex<f32>>'}}
  %l = train.accumulate microbatches = 2 batch(%x : tensor<8x3xf32>) accumulators(%z : tensor<complex<f32>>) -> tensor<f32> {
  ^bb0(%a: tensor<4x3xf32>, %s: tensor<complex<f32>>):
    train.yield %s : tensor<complex<f32>>
  } finalize {
  ^bb0(%s: tensor<complex<f32>>):
    %c = arith.constant dense<1.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @cross_entropy_init_mean(%logits: tensor<4x3xf32>, %labels: tensor<4xi64>, %running: tensor<f32>) {
  // expected-error @below {{has an init, which only reduction = sum accepts}}
  %l = train.cross_entropy mean %logits, %labels init(%running) ignore_index = -100
      : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_init_type(%logits: tensor<4x3xf32>, %labels: tensor<4xi64>, %running: tensor<f64>) {
  // expected-error @below {{init must have the loss's type 'tensor<f32>', got 'tensor<f64>'}}
  %l = train.cross_entropy sum %logits, %labels init(%running) ignore_index = -100
      : (tensor<4x3xf32>, tensor<4xi64>, tensor<f64>) -> tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// train.all_reduce
//===----------------------------------------------------------------------===//

// -----

func.func @all_reduce_index(%x: tensor<4xindex>) {
  // expected-error @below {{'train.all_reduce' op needs an integer or float element type, got 'tensor<4xindex>'}}
  %r = train.all_reduce sum %x : tensor<4xindex>
  return
}

// -----

func.func @all_reduce_avg_int(%x: tensor<4xi32>) {
  // expected-error @below {{'avg' needs a float element type, got 'tensor<4xi32>'}}
  %r = train.all_reduce avg %x : tensor<4xi32>
  return
}

// -----

func.func @all_reduce_result_type(%x: tensor<4xf32>) {
  // expected-error @below {{failed to verify that all of {input, result} have same type}}
  %r = "train.all_reduce"(%x) <{kind = 0 : i32}> : (tensor<4xf32>) -> tensor<4xf16>
  return
}

//===----------------------------------------------------------------------===//
// train.reduce_scatter, train.all_gather
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_scatter_not_multiple(%x: tensor<10xf32>) {
  // expected-error @below {{'train.reduce_scatter' op the input (10 elements) must be a multiple of the result (4 elements)}}
  %r = train.reduce_scatter sum %x : tensor<10xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_scatter_ranks(%x: tensor<12xf32>) attributes {train.data_parallel = 2 : i64} {
  // expected-error @below {{'train.reduce_scatter' op the input must have train.data_parallel = 2 times the result's 4 elements, got 12}}
  %r = train.reduce_scatter sum %x : tensor<12xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_scatter_element(%x: tensor<8xf32>) {
  // expected-error @below {{'train.reduce_scatter' op needs integer or float vectors of one element type, got 'tensor<8xf32>' and 'tensor<4xf64>'}}
  %r = train.reduce_scatter sum %x : tensor<8xf32> -> tensor<4xf64>
  return
}

// -----

func.func @reduce_scatter_avg_int(%x: tensor<8xi32>) {
  // expected-error @below {{'avg' needs a float element type, got 'tensor<8xi32>'}}
  %r = train.reduce_scatter avg %x : tensor<8xi32> -> tensor<4xi32>
  return
}

// -----

func.func @reduce_scatter_rank(%x: tensor<2x4xf32>) {
  // expected-error @below {{'train.reduce_scatter' op operand #0 must be 1D tensor of any type values, but got 'tensor<2x4xf32>'}}
  %r = train.reduce_scatter sum %x : tensor<2x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @all_gather_ranks(%x: tensor<4xf32>) attributes {train.data_parallel = 4 : i64} {
  // expected-error @below {{'train.all_gather' op the result must have train.data_parallel = 4 times the input's 4 elements, got 8}}
  %r = train.all_gather %x : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @all_gather_not_multiple(%x: tensor<3xi64>) {
  // expected-error @below {{'train.all_gather' op the result (8 elements) must be a multiple of the input (3 elements)}}
  %r = train.all_gather %x : tensor<3xi64> -> tensor<8xi64>
  return
}

// -----

func.func @all_gather_index(%x: tensor<3xindex>) {
  // expected-error @below {{'train.all_gather' op needs integer or float vectors of one element type, got 'tensor<6xindex>' and 'tensor<3xindex>'}}
  %r = train.all_gather %x : tensor<3xindex> -> tensor<6xindex>
  return
}

// -----

func.func @shard_stage(%w: tensor<4xf32>, %x: tensor<8x4xf32>) -> tensor<f32> {
  // expected-error @below {{'shard' must be a stage from 0 to 3, got 4}}
  %loss, %gw = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {data_parallel = 2 : i64, shard = 4 : i64} -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %e = tensor.empty() : tensor<f32>
    %l = linalg.dot ins(%pw, %pw : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<f32>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss : tensor<f32>
}

// -----

// expected-error @below {{'train.shard' must be an integer from 0 to 3, got 5 : i64}}
func.func @shard_attribute() attributes {train.shard = 5 : i64} {
  return
}

//===----------------------------------------------------------------------===//
// train.global_norm, train.clip_by_global_norm
//===----------------------------------------------------------------------===//

// -----

func.func @global_norm_empty() {
  // expected-error @below {{'train.global_norm' op needs at least one input}}
  %n = "train.global_norm"() : () -> tensor<f32>
  return
}

// -----

func.func @global_norm_int(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @below {{input #1 must be a float tensor, got 'tensor<4xi32>'}}
  %n = train.global_norm %a, %b : tensor<4xf32>, tensor<4xi32> -> tensor<f32>
  return
}

// -----

func.func @global_norm_result(%a: tensor<4xf32>) {
  // expected-error @below {{the norm must be a 0-d float tensor, got 'tensor<1xf32>'}}
  %n = train.global_norm %a : tensor<4xf32> -> tensor<1xf32>
  return
}

// -----

func.func @clip_max_norm(%a: tensor<4xf32>) {
  // expected-error @below {{'train.clip_by_global_norm' op max_norm must be positive, got 0}}
  %c, %n = train.clip_by_global_norm %a max_norm = 0.0 : tensor<4xf32> -> tensor<f32>
  return
}

// -----

func.func @clip_int(%a: tensor<4xi32>) {
  // expected-error @below {{input #0 must be a float tensor, got 'tensor<4xi32>'}}
  %c, %n = train.clip_by_global_norm %a max_norm = 1.0 : tensor<4xi32> -> tensor<f32>
  return
}

// -----

func.func @clip_result_types(%a: tensor<4xf32>) {
  // expected-error @below {{failed to verify that clipped values have the types of the inputs}}
  %c, %n = "train.clip_by_global_norm"(%a) <{max_norm = 1.0 : f64}> : (tensor<4xf32>) -> (tensor<5xf32>, tensor<f32>)
  return
}

//===----------------------------------------------------------------------===//
// train.sgd, train.adamw
//===----------------------------------------------------------------------===//

// -----

func.func @sgd_int(%p: tensor<4xi32>, %lr: tensor<f32>) {
  // expected-error @below {{'train.sgd' op the parameter must be a float tensor, got 'tensor<4xi32>'}}
  %r = train.sgd %p, %p, %lr : tensor<4xi32>, tensor<f32>
  return
}

// -----

func.func @sgd_lr(%p: tensor<4xf32>, %lr: tensor<1xf32>) {
  // expected-error @below {{the learning rate must be a 0-d float tensor, got 'tensor<1xf32>'}}
  %r = train.sgd %p, %p, %lr : tensor<4xf32>, tensor<1xf32>
  return
}

// -----

func.func @sgd_weight_decay(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @below {{weight_decay must be non-negative, got -1}}
  %r = train.sgd %p, %p, %lr {weight_decay = -1.0} : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @sgd_grad_type(%p: tensor<4xf32>, %g: tensor<5xf32>, %lr: tensor<f32>) {
  // expected-error @below {{failed to verify that all of {param, grad, new_param} have same type}}
  %r = "train.sgd"(%p, %g, %lr) : (tensor<4xf32>, tensor<5xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @adamw_moment_int(%p: tensor<4xf32>, %m: tensor<4xi32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @below {{'train.adamw' op the moments must be float tensors, got 'tensor<4xi32>'}}
  %a, %b, %c = train.adamw %p, %p, %m, %m, %lr, %t : tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i64>
  return
}

// -----

func.func @adamw_moment_shape(%p: tensor<4xf32>, %m: tensor<2x2xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @below {{the moments 'tensor<2x2xf32>' must have the parameter's shape 'tensor<4xf32>'}}
  %a, %b, %c = train.adamw %p, %p, %m, %m, %lr, %t : tensor<4xf32>, tensor<2x2xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

func.func @adamw_step(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<2xi64>) {
  // expected-error @below {{the step must be a 0-d integer or float tensor, got 'tensor<2xi64>'}}
  %a, %b, %c = train.adamw %p, %p, %p, %p, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<2xi64>
  return
}

// -----

func.func @adamw_lr(%p: tensor<4xf32>, %lr: tensor<i32>, %t: tensor<i64>) {
  // expected-error @below {{the learning rate must be a 0-d float tensor, got 'tensor<i32>'}}
  %a, %b, %c = train.adamw %p, %p, %p, %p, %lr, %t : tensor<4xf32>, tensor<4xf32>, tensor<i32>, tensor<i64>
  return
}

// -----

func.func @adamw_beta1(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @below {{beta1 must lie in [0, 1), got 1}}
  %a, %b, %c = train.adamw %p, %p, %p, %p, %lr, %t {beta1 = 1.0} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

func.func @adamw_beta2(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @below {{beta2 must lie in [0, 1), got -2}}
  %a, %b, %c = train.adamw %p, %p, %p, %p, %lr, %t {beta2 = -2.0} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

func.func @adamw_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @below {{eps must be positive, got 0}}
  %a, %b, %c = train.adamw %p, %p, %p, %p, %lr, %t {eps = 0.0} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @below {{weight_decay must be non-negative, got -3}}
  %a, %b, %c = train.adamw %p, %p, %p, %p, %lr, %t {weight_decay = -3.0} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

func.func @adamw_moment_types(%p: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf16>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @below {{failed to verify that all of {m, v, new_m, new_v} have same type}}
  %a, %b, %c = "train.adamw"(%p, %p, %m, %v, %lr, %t) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

func.func @ce_grad_logits_rank(%l: tensor<4x5x6xf32>, %y: tensor<4xi64>, %d: tensor<f32>) {
  // expected-error @below {{logits must be a rank-2 float tensor [N, V], got 'tensor<4x5x6xf32>'}}
  %g = train.cross_entropy_grad mean %l, %y, %d ignore_index = -100 : (tensor<4x5x6xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5x6xf32>
  return
}

// -----

func.func @ce_grad_labels(%l: tensor<4x5xf32>, %y: tensor<3xi64>, %d: tensor<f32>) {
  // expected-error @below {{labels must be a rank-1 integer tensor of 4 elements, got 'tensor<3xi64>'}}
  %g = train.cross_entropy_grad mean %l, %y, %d ignore_index = -100 : (tensor<4x5xf32>, tensor<3xi64>, tensor<f32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @ce_grad_dloss_none(%l: tensor<4x5xf32>, %y: tensor<4xi64>, %d: tensor<f32>) {
  // expected-error @below {{with reduction = none dloss must be 'tensor<4xf32>', got 'tensor<f32>'}}
  %g = train.cross_entropy_grad none %l, %y, %d ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @ce_grad_result(%l: tensor<4x5xf32>, %y: tensor<4xi64>, %d: tensor<f32>) {
  // expected-error @below {{dlogits must have the logits' type 'tensor<4x5xf32>', got 'tensor<4x5xf64>'}}
  %g = train.cross_entropy_grad sum %l, %y, %d ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf64>
  return
}

//===----------------------------------------------------------------------===//
// train.attention, train.attention_grad
//===----------------------------------------------------------------------===//

func.func @att_rank(%q: tensor<2x4x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) {
  // expected-error @below {{query must be a static rank-4 float tensor [batch, position, head, feature], got 'tensor<2x4x8xf32>'}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_element(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf64>) {
  // expected-error @below {{value must have the query's element type 'f32', got 'tensor<2x4x3x8xf64>'}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf64>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_key(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x2x8xf32>, %v: tensor<2x4x3x8xf32>) {
  // expected-error @below {{key must have the query's batch, heads and features ([2, T, 3, 8]), got 'tensor<2x4x2x8xf32>'}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_value(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x5x3x8xf32>) {
  // expected-error @below {{value must have the key's batch, positions and heads ([2, 4, 3, E]), got 'tensor<2x5x3x8xf32>'}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x5x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_causal(%q: tensor<2x4x3x8xf32>, %k: tensor<2x6x3x8xf32>, %v: tensor<2x6x3x8xf32>) {
  // expected-error @below {{is causal but has 4 queries and 6 keys (causal attention needs as many of each)}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64, causal} : (tensor<2x4x3x8xf32>, tensor<2x6x3x8xf32>, tensor<2x6x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_tile(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) {
  // expected-error @below {{key_tile = 3 must be 0 (one tile) or divide the 4 keys}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64, key_tile = 3 : i64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_query_tile(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) {
  // expected-error @below {{query_tile = 3 must be 0 (one tile) or divide the 4 queries}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64, query_tile = 3 : i64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_out(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) {
  // expected-error @below {{out must be 'tensor<2x4x3x8xf32>', got 'tensor<2x4x3x5xf32>'}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x5xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_lse(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) {
  // expected-error @below {{lse must be 'tensor<2x3x4xf32>' [batch, head, query], got 'tensor<2x4x3xf32>'}}
  %o, %l = train.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3xf32>)
  return
}

// -----

func.func @att_key_mask(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>, %m: tensor<2x3xi1>) {
  // expected-error @below {{key_mask must be 'tensor<2x4xi1>' [batch, key] (true where the key is seen), got 'tensor<2x3xi1>'}}
  %o, %l = train.attention %q, %k, %v key_mask %m {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3xi1>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @att_grad_key_mask(%k: tensor<2x4x3x8xf32>, %l: tensor<2x3x4xf32>, %m: tensor<2x4xi8>) {
  // expected-error @below {{key_mask must be 'tensor<2x4xi1>' [batch, key] (true where the key is seen), got 'tensor<2x4xi8>'}}
  %a0, %a1, %a2 = train.attention_grad %k, %k, %k, %k, %l, %k key_mask %m {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4x3x8xf32>, tensor<2x4xi8>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>)
  return
}

// -----

func.func @att_grad_shape(%a: tensor<2x4x8xf32>, %k: tensor<2x4x3x8xf32>, %l: tensor<2x3x4xf32>) {
  // expected-error @below {{query must be a static rank-4 float tensor [batch, position, head, feature], got 'tensor<2x4x8xf32>'}}
  %a0, %a1, %a2 = train.attention_grad %a, %k, %k, %k, %l, %k {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>)
  return
}

// -----

func.func @att_grad_out(%o5: tensor<2x4x3x5xf32>, %k: tensor<2x4x3x8xf32>, %l: tensor<2x3x4xf32>) {
  // expected-error @below {{out must be 'tensor<2x4x3x8xf32>', got 'tensor<2x4x3x5xf32>'}}
  %a0, %a1, %a2 = train.attention_grad %k, %k, %k, %o5, %l, %k {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>)
  return
}

// -----

func.func @att_grad_dout(%o5: tensor<2x4x3x5xf32>, %k: tensor<2x4x3x8xf32>, %l: tensor<2x3x4xf32>) {
  // expected-error @below {{dout must have the out's type 'tensor<2x4x3x8xf32>', got 'tensor<2x4x3x5xf32>'}}
  %a0, %a1, %a2 = train.attention_grad %k, %k, %k, %k, %l, %o5 {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4x3x5xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>)
  return
}

// -----

func.func @att_grad_lse(%l2: tensor<2x4x3xf32>, %k: tensor<2x4x3x8xf32>, %l: tensor<2x3x4xf32>) {
  // expected-error @below {{lse must be 'tensor<2x3x4xf32>' [batch, head, query], got 'tensor<2x4x3xf32>'}}
  %a0, %a1, %a2 = train.attention_grad %k, %k, %k, %k, %l2, %k {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>)
  return
}

// -----

func.func @att_grad_dlse(%l2: tensor<2x4x3xf32>, %k: tensor<2x4x3x8xf32>, %l: tensor<2x3x4xf32>) {
  // expected-error @below {{dlse must have the lse's type 'tensor<2x3x4xf32>', got 'tensor<2x4x3xf32>'}}
  %a0, %a1, %a2 = train.attention_grad %k, %k, %k, %k, %l, %k, %l2 {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>)
  return
}

// -----

func.func @att_grad_result(%k: tensor<2x4x3x8xf32>, %l: tensor<2x3x4xf32>) {
  // expected-error @below {{dkey must have its operand's type 'tensor<2x4x3x8xf32>', got 'tensor<2x4x3x8xf64>'}}
  %a0, %a1, %a2 = train.attention_grad %k, %k, %k, %k, %l, %k {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf64>, tensor<2x4x3x8xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// train.check_labels
//===----------------------------------------------------------------------===//

// -----

func.func @check_labels_classes(%y: tensor<8xi64>) {
  // expected-error @below {{'train.check_labels' op num_classes must be positive, got 0}}
  train.check_labels %y num_classes = 0 ignore_index = -100 : tensor<8xi64>
  return
}

// -----

func.func @check_labels_ignore(%y: tensor<8xi64>) {
  // expected-error @below {{'train.check_labels' op ignore_index = 2 is a valid class index in [0, 5)}}
  train.check_labels %y num_classes = 5 ignore_index = 2 : tensor<8xi64>
  return
}

// -----

func.func @check_labels_argument(%y: tensor<8xi64>) {
  // expected-error @below {{'train.check_labels' op argument must be >= 0 when present, got -1}}
  train.check_labels %y num_classes = 5 ignore_index = -100 argument = -1 : tensor<8xi64>
  return
}

// -----

func.func @check_labels_partial_box(%y: tensor<8xi64>) {
  // expected-error @below {{'train.check_labels' op offsets, sizes and strides go together}}
  train.check_labels %y num_classes = 5 ignore_index = -100 offsets = [0] : tensor<8xi64>
  return
}

// -----

func.func @check_labels_box_rank(%y: tensor<8x2xi64>) {
  // expected-error @below {{'train.check_labels' op offsets, sizes and strides need 2 entries each (the rank of the labels)}}
  train.check_labels %y num_classes = 5 ignore_index = -100 offsets = [0] sizes = [8] strides = [1] : tensor<8x2xi64>
  return
}

// -----

func.func @check_labels_box_values(%y: tensor<8xi64>) {
  // expected-error @below {{'train.check_labels' op dimension 0: offset 0, size 4, stride 0 (offsets >= 0, sizes and strides > 0)}}
  train.check_labels %y num_classes = 5 ignore_index = -100 offsets = [0] sizes = [4] strides = [0] : tensor<8xi64>
  return
}

// -----

func.func @check_labels_box_bounds(%y: tensor<8xi64>) {
  // expected-error @below {{'train.check_labels' op dimension 0: the box ends at 8, past the labels' size 8}}
  train.check_labels %y num_classes = 5 ignore_index = -100 offsets = [2] sizes = [4] strides = [2] : tensor<8xi64>
  return
}

// -----

func.func @check_labels_type(%y: tensor<8xf32>) {
  // expected-error @below {{operand #0 must be ranked tensor of signless integer values}}
  train.check_labels %y num_classes = 5 ignore_index = -100 : tensor<8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

// expected-error @below {{'train.data_parallel' must be an integer >= 1, got 0 : i64}}
func.func @ranks_zero() attributes {train.data_parallel = 0 : i64} {
  return
}

// -----

// expected-error @below {{'train.signature' must be a function type, got i32}}
func.func @signature_not_function() attributes {train.signature = i32} {
  return
}

// -----

func.func @loss_result_on_op() {
  // expected-error @below {{'train.loss_result' belongs on a function, not on 'arith.constant'}}
  %c = arith.constant {train.loss_result = 0 : i64} 0 : i32
  return
}

// -----

// expected-error @below {{'train.gradient_results' names result #3, but the recorded signature has 2 result(s)}}
func.func @gradient_out_of_range(%w: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
    attributes {train.signature = (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>),
                train.loss_result = 0 : i64, train.gradient_results = array<i64: 1, 3>} {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @below {{unknown attribute 'train.batch' of the train dialect (known: train.signature, train.loss_result, train.gradient_results, train.data_parallel, train.shard, train.kernel, train.parallel, train.per_example, train.remat, train.memory_plan, train.init, train.name, train.argument_names)}}
func.func @unknown_attribute() attributes {train.batch = 8 : i64} {
  return
}

// -----

func.func @per_example_off_linalg(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'train.per_example' belongs on a linalg operation, not on 'arith.addf'}}
  %b = arith.addf %a, %a {train.per_example} : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @per_example_not_unit(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{'train.per_example' must be a unit attribute, got 1 : i64}}
  %b = linalg.copy {train.per_example = 1 : i64} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @remat_mark(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'train.remat' must be "save" or "recompute", got "keep"}}
  %b = arith.addf %a, %a {train.remat = "keep"} : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// expected-error @below {{'train.memory_plan' belongs on a train.step, not on 'func.func'}}
func.func @memory_plan_on_func() attributes {train.memory_plan = {budget = 1 : i64, peak = 1 : i64, unplanned = 1 : i64, checkpoints = 0 : i64}} {
  return
}

// -----

func.func @memory_plan_without_peak(%w: tensor<4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  // expected-error @below {{'train.memory_plan' needs an integer 'peak'}}
  %loss, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {train.memory_plan = {budget = 100 : i64, unplanned = 1 : i64, checkpoints = 0 : i64}}
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @below {{'train.init' of argument #1 must be "zeros", "ones" or a non-negative standard deviation (a float), got "uniform"}}
func.func @init_kind(%a: tensor<4xf32> {train.init = "zeros"}, %b: tensor<4xf32> {train.init = "uniform"}) {
  return
}

// -----

// expected-error @below {{'train.init' of argument #0 must be "zeros", "ones" or a non-negative standard deviation (a float), got -2.000000e-02 : f64}}
func.func @init_negative(%a: tensor<4xf32> {train.init = -0.02 : f64}) {
  return
}

// -----

// expected-error @below {{unknown argument attribute 'train.start' of the train dialect (known: train.init, train.name)}}
func.func @unknown_argument_attribute(%a: tensor<4xf32> {train.start = 1.0 : f64}) {
  return
}

// -----

// expected-error @below {{'train.init' belongs on a function argument, not on 'func.func'}}
func.func @init_on_function() attributes {train.init = "zeros"} {
  return
}

// -----

// expected-error @below {{'train.name' of argument #0 must be a non-empty string, got ""}}
func.func @empty_name(%a: tensor<4xf32> {train.name = ""}) {
  return
}

// -----

// expected-error @below {{'train.name' of argument #0 must be a non-empty string, got 3 : i64}}
func.func @name_not_string(%a: tensor<4xf32> {train.name = 3 : i64}) {
  return
}

// -----

// expected-error @below {{'train.name' belongs on a function argument, not on 'func.func'}}
func.func @name_on_function() attributes {train.name = "w"} {
  return
}

// -----

// expected-error @below {{'train.argument_names' must be an array of strings without whitespace, got ["a b"]}}
func.func @spaced_names(%a: tensor<4xf32>) attributes {train.argument_names = ["a b"]} {
  return
}

// -----

// expected-error @below {{'train.argument_names' must be an array of strings without whitespace, got "w"}}
func.func @names_not_array(%a: tensor<4xf32>) attributes {train.argument_names = "w"} {
  return
}

// -----

// expected-error @below {{'train.argument_names' names 2 argument(s), but train.signature takes 1}}
func.func @names_count(%a: tensor<4xf32>) attributes {train.argument_names = ["w", "x"], train.signature = (tensor<4xf32>) -> ()} {
  return
}

// -----

func.func @names_on_op() {
  // expected-error @below {{'train.argument_names' belongs on a function, not on 'arith.constant'}}
  %c = arith.constant {train.argument_names = ["w"]} 0 : i32
  return
}

// -----

func.func @stop_gradient_type(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @below {{'train.stop_gradient' op failed to verify that all of {input, result} have same type}}
  %d = "train.stop_gradient"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  return %d : tensor<4xf64>
}
