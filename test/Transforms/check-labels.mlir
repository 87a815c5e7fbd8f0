// RUN: ga-opt %s --train-check-labels -split-input-file -verify-diagnostics | FileCheck %s
// Run twice, the checks are not repeated.
// RUN: ga-opt %s --train-check-labels --train-check-labels -split-input-file -verify-diagnostics | FileCheck %s

// Labels read whole through a reshape: one check of the whole argument, at
// the start of the function, naming the argument.
// CHECK-LABEL: func.func @whole
// CHECK-SAME: %[[Y:[a-z0-9]+]]: tensor<16x1xi64>
// CHECK-NEXT: train.check_labels %[[Y]] num_classes = 3 ignore_index = -100 argument = 2 : tensor<16x1xi64>
// CHECK-NOT: train.check_labels
// CHECK: train.step
func.func @whole(%w: tensor<4x3xf32>, %x: tensor<16x4xf32>, %y: tensor<16x1xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %l, %g = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<16x4xf32>, tensor<16x1xi64>) -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%w_: tensor<4x3xf32>, %x_: tensor<16x4xf32>, %y_: tensor<16x1xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<16x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<16x3xf32>) -> tensor<16x3xf32>
    %logits = linalg.matmul ins(%x_, %w_ : tensor<16x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<16x3xf32>) -> tensor<16x3xf32>
    %flat = tensor.collapse_shape %y_ [[0, 1]] : tensor<16x1xi64> into tensor<16xi64>
    %loss = train.cross_entropy mean %logits, %flat ignore_index = -100 : (tensor<16x3xf32>, tensor<16xi64>) -> tensor<f32>
    train.yield %loss : tensor<f32>
  }
  return %l, %g : tensor<f32>, tensor<4x3xf32>
}

// -----

// Shifted labels (a next-token loss), through a checkpoint and two slices:
// the check covers exactly the box the loss reads, in the argument's
// coordinates (offsets 1 + 2 * 0 = 1 and 0 + 1 * 1 = 1, stride 2 in
// dimension 0).
// CHECK-LABEL: func.func @shifted
// CHECK-NEXT: train.check_labels %{{.+}} num_classes = 3 ignore_index = -1 argument = 1 offsets = [1, 1] sizes = [4, 3] strides = [2, 1] : tensor<8x4xi64>
func.func @shifted(%w: tensor<4x3xf32>, %y: tensor<8x4xi64>, %logits: tensor<12x3xf32>) -> tensor<f32> {
  %l = train.checkpoint (%y, %logits : tensor<8x4xi64>, tensor<12x3xf32>) -> tensor<f32> {
  ^bb0(%y_: tensor<8x4xi64>, %logits_: tensor<12x3xf32>):
    %odd = tensor.extract_slice %y_[1, 0] [4, 4] [2, 1] : tensor<8x4xi64> to tensor<4x4xi64>
    %next = tensor.extract_slice %odd[0, 1] [4, 3] [1, 1] : tensor<4x4xi64> to tensor<4x3xi64>
    %flat = tensor.collapse_shape %next [[0, 1]] : tensor<4x3xi64> into tensor<12xi64>
    %loss = train.cross_entropy sum %logits_, %flat ignore_index = -1 : (tensor<12x3xf32>, tensor<12xi64>) -> tensor<f32>
    train.yield %loss : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// Computed labels in the function body: checked where the loss reads them,
// with no argument.
// CHECK-LABEL: func.func @computed
// CHECK: %[[C:.+]] = arith.addi
// CHECK-NEXT: train.check_labels %[[C]] num_classes = 3 ignore_index = -100 : tensor<4xi64>
// CHECK-NEXT: train.cross_entropy
func.func @computed(%logits: tensor<4x3xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  %c = arith.addi %y, %y : tensor<4xi64>
  %loss = train.cross_entropy mean %logits, %c ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Computed labels inside a step cannot be checked there: a warning says so.
// CHECK-LABEL: func.func @computed_in_step
// CHECK-NOT: train.check_labels
func.func @computed_in_step(%w: tensor<4x3xf32>, %y: tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %l, %g = train.step params(%w : tensor<4x3xf32>) batch(%y : tensor<4xi64>) -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%w_: tensor<4x3xf32>, %y_: tensor<4xi64>):
    %logits = tensor.extract_slice %w_[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> to tensor<4x3xf32>
    %c = arith.addi %y_, %y_ : tensor<4xi64>
    // expected-warning @below {{its labels do not come from a function argument through reshapes and static slices (run train-check-labels before train-split-batch): an invalid label is clamped, not reported}}
    %loss = train.cross_entropy mean %logits, %c ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    train.yield %loss : tensor<f32>
  }
  return %l, %g : tensor<f32>, tensor<4x3xf32>
}

// -----

// The loss and its adjoint read the same labels: one check.
// CHECK-LABEL: func.func @loss_and_grad
// CHECK-NEXT: train.check_labels %{{.+}} num_classes = 3 ignore_index = -100 argument = 1 : tensor<4xi64>
// CHECK-NOT: train.check_labels
func.func @loss_and_grad(%logits: tensor<4x3xf32>, %y: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss = train.cross_entropy mean %logits, %y ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  %g = train.cross_entropy_grad mean %logits, %y, %d ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
  return %loss, %g : tensor<f32>, tensor<4x3xf32>
}

// -----

// Dynamic classes: a warning.
func.func @dynamic(%logits: tensor<4x?xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  // expected-warning @below {{the number of classes is not static: its labels are not checked at run time}}
  %loss = train.cross_entropy sum %logits, %y ignore_index = -100 : (tensor<4x?xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
