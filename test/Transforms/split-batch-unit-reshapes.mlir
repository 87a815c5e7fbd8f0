// Reshapes through a unit dimension, as torch-mlir's einsum writes them
// ([B*S, D] expanded into [1, B*S, D] and collapsed back): the batch moves
// to the first dimension that is not a unit, and the split re-types it.
// RUN: ga-opt %s --test-train-decomposability -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLASS
// RUN: ga-opt %s --train-split-batch | FileCheck %s --check-prefix=SPLIT

// CLASS: remark: per-example (batch dimension 1)
// CLASS-NEXT: tensor.expand_shape
// CLASS: remark: per-example (batch dimension 0)
// CLASS-NEXT: tensor.collapse_shape

// SPLIT: train.accumulate microbatches = 2
// SPLIT: tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
// SPLIT: tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>

func.func @unit_reshapes(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %e = tensor.expand_shape %bx [[0, 1], [2]] output_shape [1, 8, 4] : tensor<8x4xf32> into tensor<1x8x4xf32>
    %c = tensor.collapse_shape %e [[0, 1], [2]] : tensor<1x8x4xf32> into tensor<8x4xf32>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%c, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
