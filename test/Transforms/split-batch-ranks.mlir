// RUN: ga-opt %s --train-normalize-loss --train-split-batch | FileCheck %s --check-prefix=RANKS
// RUN: ga-opt %s --train-normalize-loss --train-split-batch=naive=true | FileCheck %s --check-prefix=NAIVE
// RUN: ga-opt %s --ga-pipeline=target=cpu | FileCheck %s --check-prefix=LLVM

// data_parallel = 2 x microbatches = 2 of a step whose loss reads shifted
// labels (as in split-batch.mlir).

// Every rank takes its 4 of the 8 examples; the count of its shifted labels
// is summed across the ranks before anything reads it (the loss divisor and
// the auxiliary count output); the accumulate runs 2 micro-batches of 2
// examples on the rank's rows; the loss and the gradient are summed across
// the ranks.
// RANKS-LABEL: func.func @shifted
// RANKS-SAME: %[[W:[^:]*]]: tensor<4x3xf32>, %[[X:[^:]*]]: tensor<8x5x4xf32>, %[[Y:[^:]*]]: tensor<8x5xi64>
// RANKS-SAME: attributes {train.data_parallel = 2 : i64}
// RANKS: %[[RANK:.*]] = train.rank : index
// RANKS: %[[ROWS:.*]] = arith.constant 4 : index
// RANKS: %[[OFF:.*]] = arith.muli %[[RANK]], %[[ROWS]] : index
// RANKS: %[[XL:.*]] = tensor.extract_slice %[[X]][%[[OFF]], 0, 0] [4, 5, 4] [1, 1, 1] : tensor<8x5x4xf32> to tensor<4x5x4xf32>
// RANKS: %[[YL:.*]] = tensor.extract_slice %[[Y]][%[[OFF]], 0] [4, 5] [1, 1] : tensor<8x5xi64> to tensor<4x5xi64>
// RANKS: tensor.extract_slice %[[YL]][0, 1] [4, 4] [1, 1] : tensor<4x5xi64> to tensor<4x4xi64>
// RANKS: %[[LOCAL:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<16xi64>) outs(%{{.*}} : tensor<f32>)
// RANKS: %[[COUNT:.*]] = train.all_reduce sum %[[LOCAL]] : tensor<f32>
// RANKS: %[[AUX:.*]] = linalg.generic {{.*}} ins(%[[COUNT]] : tensor<f32>) outs(%{{.*}} : tensor<i64>)
// RANKS: %[[LOSS:.*]], %[[GRAD:.*]] = train.accumulate microbatches = 2 params(%[[W]] : tensor<4x3xf32>) batch(%[[XL]], %[[YL]] : tensor<4x5x4xf32>, tensor<4x5xi64>) globals(%[[COUNT]] : tensor<f32>)
// RANKS: ^bb0(%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<2x5x4xf32>, %{{.*}}: tensor<2x5xi64>, %{{.*}}: tensor<f32>):
// RANKS: linalg.matmul {{.*}} -> tensor<8x3xf32>
// RANKS: train.cross_entropy sum {{.*}} : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
// RANKS: train.yield
// RANKS: %[[L:.*]] = train.all_reduce sum %[[LOSS]] : tensor<f32>
// RANKS: %[[G:.*]] = train.all_reduce sum %[[GRAD]] : tensor<4x3xf32>
// RANKS: return %[[L]], %[[G]], %[[AUX]]

// Naive: no global; each micro-batch counts its own labels, the results are
// halved for the micro-batches and averaged across the ranks. The auxiliary
// count is still the global one.
// NAIVE-LABEL: func.func @shifted
// NAIVE: train.rank
// NAIVE: %[[LOCAL:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<16xi64>) outs(%{{.*}} : tensor<f32>)
// NAIVE: train.all_reduce sum %[[LOCAL]] : tensor<f32>
// NAIVE: train.accumulate microbatches = 2 params({{.*}}) batch({{.*}}) -> tensor<f32>
// NAIVE-NOT: globals
// NAIVE: ins(%{{.*}} : tensor<8xi64>) outs(%{{.*}} : tensor<f32>)
// NAIVE: train.yield
// NAIVE: %[[HL:.*]] = linalg.generic
// NAIVE: arith.constant 5.000000e-01 : f32
// NAIVE: %[[HG:.*]] = linalg.generic
// NAIVE: arith.constant 5.000000e-01 : f32
// NAIVE: train.all_reduce avg %[[HL]] : tensor<f32>
// NAIVE: train.all_reduce avg %[[HG]] : tensor<4x3xf32>
// NAIVE-NOT: train.all_reduce

// The CPU pipeline: the rank and the three reductions (count, loss,
// gradient) are runtime calls; the function keeps train.data_parallel for
// ga-run.
// LLVM-DAG: llvm.func @ga_all_reduce_f32(i64, !llvm.ptr, i32)
// LLVM-DAG: llvm.func @ga_rank() -> i64
// LLVM: llvm.func @shifted({{.*}} attributes {{{.*}}train.data_parallel = 2 : i64
// LLVM: llvm.call @ga_rank() : () -> i64
// LLVM-COUNT-3: llvm.call @ga_all_reduce_f32
// LLVM-NOT: llvm.call @ga_all_reduce_f32

func.func @shifted(%w: tensor<4x3xf32>, %x: tensor<8x5x4xf32>, %y: tensor<8x5xi64>) -> (tensor<f32>, tensor<4x3xf32>, tensor<i64>) {
  %loss, %gw, %n = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x5x4xf32>, tensor<8x5xi64>)
      attributes {microbatches = 2 : i64, data_parallel = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<i64>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x5x4xf32>, %by: tensor<8x5xi64>):
    %zero = arith.constant 0.0 : f32
    %xs = tensor.extract_slice %bx[0, 0, 0] [8, 4, 4] [1, 1, 1] : tensor<8x5x4xf32> to tensor<8x4x4xf32>
    %xf = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<8x4x4xf32> into tensor<32x4xf32>
    %ys = tensor.extract_slice %by[0, 1] [8, 4] [1, 1] : tensor<8x5xi64> to tensor<8x4xi64>
    %yf = tensor.collapse_shape %ys [[0, 1]] : tensor<8x4xi64> into tensor<32xi64>
    %init = tensor.empty() : tensor<32x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<32x3xf32>) -> tensor<32x3xf32>
    %logits = linalg.matmul ins(%xf, %pw : tensor<32x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<32x3xf32>) -> tensor<32x3xf32>
    %l, %c = train.cross_entropy mean %logits, %yf ignore_index = -100 : (tensor<32x3xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %c : tensor<f32>, tensor<i64>
  }
  return %loss, %gw, %n : tensor<f32>, tensor<4x3xf32>, tensor<i64>
}
