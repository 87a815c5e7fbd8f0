// RUN: ga-opt %s --test-train-adjoint-needs -verify-diagnostics -o /dev/null
// RUN: ga-opt %s --train-split-batch --train-differentiate | FileCheck %s --check-prefix=AD
// RUN: ga-opt %s --train-split-batch | FileCheck %s --check-prefix=SPLIT

// train.attention in a step: what its adjoint reads (the operands and both
// results, never the probabilities), the gradient train-differentiate
// emits, and how a split treats it (attention mixes positions within an
// example, never examples; a split that pairs the batch's queries with
// other keys is refused in split-batch-errors.mlir).

// AD-LABEL: func.func @attention_step
// AD: %[[O:.+]], %[[LSE:.+]] = train.attention %[[Q:[^,]+]], %[[Q]], %[[Q]] {causal, key_tile = 2 : i64, scale = 5.000000e-01 : f64}
// AD: train.attention_grad %[[Q]], %[[Q]], %[[Q]], %[[O]], %[[LSE]], %{{[^ ]+}} {causal, key_tile = 2 : i64, scale = 5.000000e-01 : f64}
// AD-SAME: -> (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>)

// SPLIT-LABEL: func.func @attention_step
// SPLIT: train.accumulate
// SPLIT: train.attention {{.*}} : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> (tensor<2x4x1x2xf32>, tensor<2x1x4xf32>)
func.func @attention_step(%w: tensor<2x2xf32>, %x: tensor<4x4x2xf32>, %y: tensor<4x4xi64>) -> (tensor<f32>, tensor<2x2xf32>) {
  %loss, %gw = train.step params(%w : tensor<2x2xf32>) batch(%x, %y : tensor<4x4x2xf32>, tensor<4x4xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<2x2xf32>) {
  ^bb0(%pw: tensor<2x2xf32>, %bx3: tensor<4x4x2xf32>, %by2: tensor<4x4xi64>):
    // expected-remark @below {{adjoint needs operands [], results []}}
    %bx = tensor.collapse_shape %bx3 [[0, 1], [2]] : tensor<4x4x2xf32> into tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %by = tensor.collapse_shape %by2 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %zero = arith.constant 0.0 : f32
    // expected-remark @below {{adjoint needs operands [], results []}}
    %init = tensor.empty() : tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<16x2xf32>) -> tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [0, 1], results []}}
    %h = linalg.matmul ins(%bx, %pw : tensor<16x2xf32>, tensor<2x2xf32>) outs(%acc : tensor<16x2xf32>) -> tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %q = tensor.expand_shape %h [[0, 1], [2, 3]] output_shape [4, 4, 1, 2] : tensor<16x2xf32> into tensor<4x4x1x2xf32>
    // expected-remark @below {{adjoint needs operands [0, 1, 2], results [0, 1]}}
    %o, %lse = train.attention %q, %q, %q {scale = 0.5 : f64, causal, key_tile = 2 : i64}
        : (tensor<4x4x1x2xf32>, tensor<4x4x1x2xf32>, tensor<4x4x1x2xf32>) -> (tensor<4x4x1x2xf32>, tensor<4x1x4xf32>)
    // expected-remark @below {{adjoint needs operands [], results []}}
    %flat = tensor.collapse_shape %o [[0, 1], [2, 3]] : tensor<4x4x1x2xf32> into tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [0, 1], results []}}
    %s = train.cross_entropy sum %flat, %by ignore_index = -100 : (tensor<16x2xf32>, tensor<16xi64>) -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<2x2xf32>
}

// With a key mask read from the batch (keys whose label is not -100): the
// gradient reads it too, and a micro-batch takes its rows.
// AD-LABEL: func.func @key_mask_step
// AD: %[[O:.+]], %[[LSE:.+]] = train.attention %[[Q:[^,]+]], %[[Q]], %[[Q]] key_mask %[[M:[^ ]+]] {causal, scale = 5.000000e-01 : f64}
// AD: train.attention_grad %[[Q]], %[[Q]], %[[Q]], %[[O]], %[[LSE]], %{{[^ ]+}} key_mask %[[M]] {causal, scale = 5.000000e-01 : f64}

// SPLIT-LABEL: func.func @key_mask_step
// SPLIT: train.accumulate
// SPLIT: train.attention {{.*}} key_mask {{.*}} : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>, tensor<2x4xi1>)
func.func @key_mask_step(%w: tensor<2x2xf32>, %x: tensor<4x4x2xf32>, %y: tensor<4x4xi64>) -> (tensor<f32>, tensor<2x2xf32>) {
  %loss, %gw = train.step params(%w : tensor<2x2xf32>) batch(%x, %y : tensor<4x4x2xf32>, tensor<4x4xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<2x2xf32>) {
  ^bb0(%pw: tensor<2x2xf32>, %bx3: tensor<4x4x2xf32>, %by2: tensor<4x4xi64>):
    // expected-remark @below {{adjoint needs operands [], results []}}
    %bx = tensor.collapse_shape %bx3 [[0, 1], [2]] : tensor<4x4x2xf32> into tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %by = tensor.collapse_shape %by2 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %zero = arith.constant 0.0 : f32
    // expected-remark @below {{adjoint needs operands [], results []}}
    %ignored = arith.constant -100 : i64
    // expected-remark @below {{adjoint needs operands [], results []}}
    %init = tensor.empty() : tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<16x2xf32>) -> tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [0, 1], results []}}
    %h = linalg.matmul ins(%bx, %pw : tensor<16x2xf32>, tensor<2x2xf32>) outs(%acc : tensor<16x2xf32>) -> tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %q = tensor.expand_shape %h [[0, 1], [2, 3]] output_shape [4, 4, 1, 2] : tensor<16x2xf32> into tensor<4x4x1x2xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %me = tensor.empty() : tensor<4x4xi1>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %m = linalg.generic {indexing_maps = [affine_map<(b, j) -> (b, j)>, affine_map<(b, j) -> (b, j)>], iterator_types = ["parallel", "parallel"]}
        ins(%by2 : tensor<4x4xi64>) outs(%me : tensor<4x4xi1>) {
    ^bb0(%l: i64, %out: i1):
      %seen = arith.cmpi ne, %l, %ignored : i64
      linalg.yield %seen : i1
    } -> tensor<4x4xi1>
    // expected-remark @below {{adjoint needs operands [0, 1, 2, 3], results [0, 1]}}
    %o, %lse = train.attention %q, %q, %q key_mask %m {scale = 0.5 : f64, causal}
        : (tensor<4x4x1x2xf32>, tensor<4x4x1x2xf32>, tensor<4x4x1x2xf32>, tensor<4x4xi1>) -> (tensor<4x4x1x2xf32>, tensor<4x1x4xf32>)
    // expected-remark @below {{adjoint needs operands [], results []}}
    %flat = tensor.collapse_shape %o [[0, 1], [2, 3]] : tensor<4x4x1x2xf32> into tensor<16x2xf32>
    // expected-remark @below {{adjoint needs operands [0, 1], results []}}
    %s = train.cross_entropy sum %flat, %by ignore_index = -100 : (tensor<16x2xf32>, tensor<16xi64>) -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<2x2xf32>
}
