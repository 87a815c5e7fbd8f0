// train-set-schedule: microbatches=K and data-parallel=R set every
// train.step's counts (0 keeps the step's); a count that does not divide
// the batch is refused at the step, naming the rows per rank. The pipeline
// runs it for its microbatches=K, and the same K through ga-run's
// --microbatches gives the step written with K its bits (see
// test/Tools/pipeline-flags.test).
// RUN: ga-opt %s --train-set-schedule="microbatches=4" | FileCheck %s --check-prefix=K4
// RUN: ga-opt %s --train-set-schedule="data-parallel=2" | FileCheck %s --check-prefix=R2
// RUN: ga-opt %s --train-set-schedule | FileCheck %s --check-prefix=KEEP
// RUN: not ga-opt %s --train-set-schedule="microbatches=3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODIV
// RUN: not ga-opt %s --train-set-schedule="microbatches=2 data-parallel=8" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODIV-RANKS
// RUN: not ga-opt %s --train-set-schedule="microbatches=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: ga-opt %s --ga-pipeline="microbatches=4" -o /dev/null
// RUN: not ga-opt %s --ga-pipeline="microbatches=auto" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not ga-opt %s --ga-pipeline="microbatches=2 choose-microbatches=true memory-budget=100000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOTH

// K4: train.step
// K4-SAME: microbatches = 4 : i64
// R2: train.step
// R2-SAME: data_parallel = 2 : i64, microbatches = 2 : i64
// KEEP: train.step
// KEEP-SAME: microbatches = 2 : i64
// NODIV: error: train-set-schedule: a batch of 8 rows does not split into 1 rank(s) x 3 micro-batch(es) (3 must divide it); choose a count that divides 8, the rows per rank
// NODIV-RANKS: error: train-set-schedule: a batch of 8 rows does not split into 8 rank(s) x 2 micro-batch(es) (16 must divide it); choose a count that divides 1, the rows per rank
// NEGATIVE: error: train-set-schedule: microbatches and data-parallel must be at least 0 (0: as written in the step), got microbatches=-1 data-parallel=0
// AUTO: for the --microbatches option: 'auto' value invalid
// BOTH: microbatches=2 fixes the micro-batch count and choose-microbatches=true lets the planner choose it: give one

func.func @step(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l = train.cross_entropy mean %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
