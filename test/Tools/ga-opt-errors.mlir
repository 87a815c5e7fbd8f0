// Bad input to ga-opt gives a located diagnostic and a non-zero exit, never a
// crash (`not` fails on a crash as well as on success).
// RUN: not ga-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: not ga-opt %S/Inputs/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING

// MISSING: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory

// CHECK: ga-opt-errors.mlir:[[# @LINE + 2]]:3: error: custom op 'train.stepp' is unknown
func.func @typo(%x: tensor<8x4xf32>) {
  train.stepp
  return
}

// -----

// CHECK: ga-opt-errors.mlir:[[# @LINE + 2]]:37: error: use of value '%y' expects different type than prior uses: 'tensor<4xi64>' vs 'tensor<4xf32>'
func.func @wrong_type(%l: tensor<4x5xf32>, %y: tensor<4xf32>) {
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

// CHECK: ga-opt-errors.mlir:[[# @LINE + 2]]:8: error: 'train.cross_entropy' op labels must be a rank-1 integer tensor [N], got 'tensor<4xf32>'
func.func @verifier(%l: tensor<4x5xf32>, %y: tensor<4xf32>) {
  %r = train.cross_entropy mean %l, %y ignore_index = -100 : (tensor<4x5xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

// CHECK: ga-opt-errors.mlir:[[# @LINE + 1]]:40: error: expected ')'
func.func @unbalanced(%x: tensor<4xf32>
}

// -----

// CHECK: ga-opt-errors.mlir:[[# @LINE + 3]]:8: error: 'train.step' op body must have 1 argument(s), got 0
// A region with no block header.
func.func @no_block_args(%x: tensor<8x4xf32>) {
  %l = train.step batch(%x : tensor<8x4xf32>) -> tensor<f32> {
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return
}
