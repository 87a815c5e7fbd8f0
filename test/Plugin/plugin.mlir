// Debian's stock mlir-opt loads the ga-opt plugin: the train dialect parses,
// verifies and prints, and the ga-opt passes run.
// RUN: %mlir_opt --load-dialect-plugin=%ga_plugin %s | FileCheck %s
// RUN: %mlir_opt --load-dialect-plugin=%ga_plugin --load-pass-plugin=%ga_plugin \
// RUN:   --pass-pipeline="builtin.module(train-inline-checkpoints)" %s \
// RUN:   | FileCheck %s --check-prefix=INLINE --implicit-check-not=train.checkpoint
// RUN: %mlir_opt --load-dialect-plugin=%ga_plugin --load-pass-plugin=%ga_plugin --help \
// RUN:   | FileCheck %s --check-prefix=HELP
// The verifiers run inside the stock tool too.
// RUN: not %mlir_opt --load-dialect-plugin=%ga_plugin %S/Inputs/invalid-step.mlir 2>&1 \
// RUN:   | FileCheck %s --check-prefix=INVALID

// CHECK-LABEL: func.func @f
// CHECK: train.checkpoint(%{{.+}} : tensor<4xf32>) -> tensor<4xf32>
// CHECK: train.yield
// INLINE-LABEL: func.func @f
// INLINE-NEXT: math.tanh
// HELP: --train-inline-checkpoints
// INVALID: invalid-step.mlir:4:8: error: 'train.step' op global batch size 6 is not divisible by microbatches * data_parallel = 4
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = train.checkpoint (%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %t = math.tanh %a : tensor<4xf32>
    train.yield %t : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
