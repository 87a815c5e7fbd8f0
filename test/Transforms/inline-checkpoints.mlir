// RUN: ga-opt %s --train-inline-checkpoints --split-input-file | FileCheck %s --implicit-check-not=train.checkpoint

// CHECK-LABEL: func.func @single
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[Y:.+]]: tensor<4xf32>)
// CHECK-NEXT: %[[T:.+]] = math.tanh %[[X]] : tensor<4xf32>
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[T]], %[[Y]] : tensor<4xf32>
// CHECK-NEXT: return %[[S]], %[[Y]] : tensor<4xf32>, tensor<4xf32>
func.func @single(%x: tensor<4xf32>, %y: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = train.checkpoint (%x, %y : tensor<4xf32>, tensor<4xf32>)
      -> tensor<4xf32>, tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %t = math.tanh %a : tensor<4xf32>
    %s = arith.addf %t, %b : tensor<4xf32>
    train.yield %s, %b : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Nested checkpoints inside a step body are inlined too; the step remains.
// CHECK-LABEL: func.func @nested
// CHECK: train.step
// CHECK-NEXT: ^bb0(%[[W:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<2x4xf32>):
// CHECK-NEXT: %[[E:.+]] = math.exp %[[W]] : tensor<4xf32>
// CHECK-NEXT: %[[T:.+]] = math.tanh %[[E]] : tensor<4xf32>
// CHECK-NEXT: %[[C:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: train.yield %[[C]] : tensor<f32>
func.func @nested(%w: tensor<4xf32>, %x: tensor<2x4xf32>) -> tensor<f32> {
  %l, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<2x4xf32>)
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%w_: tensor<4xf32>, %x_: tensor<2x4xf32>):
    %outer = train.checkpoint (%w_ : tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      %e = math.exp %a : tensor<4xf32>
      %inner = train.checkpoint (%e : tensor<4xf32>) -> tensor<4xf32> {
      ^bb0(%b: tensor<4xf32>):
        %t = math.tanh %b : tensor<4xf32>
        train.yield %t : tensor<4xf32>
      }
      train.yield %inner : tensor<4xf32>
    }
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// Nothing to do.
// CHECK-LABEL: func.func @none
// CHECK-NEXT: return
func.func @none() {
  return
}
