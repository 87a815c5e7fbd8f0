// RUN: ga-opt %s --convert-train-to-linalg | FileCheck %s --implicit-check-not=train.stop_gradient
// RUN: ga-opt %s --split-input-file --verify-diagnostics --canonicalize | FileCheck %s --check-prefix=KEPT

// After differentiation, train.stop_gradient is its operand.
// CHECK-LABEL: func.func @detached
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK: return %[[X]]

// Before it, nothing folds it away (a canonicalization that did would
// change the gradient).
// KEPT: train.stop_gradient
func.func @detached(%x: tensor<4xf32>) -> tensor<4xf32> {
  %d = train.stop_gradient %x : tensor<4xf32>
  return %d : tensor<4xf32>
}
