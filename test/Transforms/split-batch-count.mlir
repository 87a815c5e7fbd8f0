// RUN: ga-opt %s --train-split-batch | FileCheck %s
// RUN: ga-opt %s --train-normalize-loss | FileCheck %s --check-prefix=NORM

// The valid-token count taken from the `count` result of the cross-entropy
// (rather than from the labels) is computed from the labels alone: the
// split hoists a reduction over the labels out of the micro-batch loop, and
// the cross-entropy, the logits and the matmul that makes them stay inside
// it, where they take a micro-batch's rows.

// CHECK-LABEL: func.func @count_result
// CHECK-NOT: train.cross_entropy
// CHECK-NOT: linalg.matmul
// CHECK: %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<8xi64>) outs(%{{.*}} : tensor<i64>)
// CHECK: arith.addi
// CHECK: train.accumulate microbatches = 2
// CHECK: linalg.matmul {{.*}} -> tensor<4x3xf32>
// CHECK: train.cross_entropy sum %{{.*}} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK: return %{{.*}}, %{{.*}}, %[[COUNT]]

// NORM-LABEL: func.func @count_result
// NORM: linalg.generic {{.*}} ins(%{{.*}} : tensor<8xi64>) outs(%{{.*}} : tensor<i64>)
// NORM: train.cross_entropy sum %{{.*}} : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>

func.func @count_result(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>, tensor<i64>) {
  %loss, %gw, %n = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<i64>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l, %c = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %c : tensor<f32>, tensor<i64>
  }
  return %loss, %gw, %n : tensor<f32>, tensor<4x3xf32>, tensor<i64>
}
