//===- Passes.td - ga-opt conversion passes ----------------*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CONVERSION_PASSES_TD
#define GA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTrainToLinalgPass : Pass<"convert-train-to-linalg"> {
  let summary = "Lower the train loss, norm and optimizer ops to linalg";
  let description = [{
    Lowers `train.cross_entropy` (every reduction, with or without the
    valid-token count) to `linalg.generic` operations on tensors:

    1. the row maximum and the sum of `exp(logits - max)` over the classes
       (a numerically stable log-sum-exp);
    2. per token, the loss `logsumexp - logits[i, label]` and a validity flag,
       both 0 where `label == ignore_index` (the label logit is gathered with
       `tensor.extract`, its index clamped to 0 for ignored tokens);
    3. for `sum` and `mean`, the sums over the tokens; `mean` divides by the
       valid count and gives 0 when there is no valid token.

    Example:

    ```mlir
    %l = train.cross_entropy mean %logits, %labels ignore_index = -100
        : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    ```

    becomes a handful of `linalg.generic` and `linalg.fill` operations.

    `train.cross_entropy_grad` becomes one elementwise `linalg.generic`
    (`scale * (softmax - onehot)`, 0 for ignored tokens) after the same row
    statistics. A gradient and the `train.cross_entropy` on the same logits
    and labels before it in its block (what `train-differentiate` leaves)
    are lowered together: the row statistics and the valid count are
    computed once, by the loss. Where no operation after the gradient reads
    the logits and they are computed in the same block, the gradient is
    computed in their place (its init is the logits, read through the init
    only): after bufferization the `[N, V]` gradient has no buffer of its
    own.

    It also lowers `train.global_norm` (a chain of sum-of-squares reductions
    in the norm's element type, then a square root),
    `train.clip_by_global_norm` (the norm, the scale
    `min(1, max_norm / (norm + 1e-6))`, one elementwise product per input),
    `train.sgd` and `train.adamw` (one elementwise `linalg.generic` each;
    AdamW computes in the moments' element type and rounds the parameter
    back to its own).

    `train.rank` becomes a call of the runtime function `ga_rank() -> i64`
    (declared in the enclosing module if missing) and an `arith.index_cast`.
    `train.all_reduce` stays: it becomes a runtime call when it is
    bufferized, in place in its input's buffer.

    `train.check_labels` becomes a `linalg.generic` reduction that finds the
    first invalid label and, under `scf.if`, a call of the runtime's
    `ga_report_error` (declared in the module if missing). The cross-entropy
    lowerings clamp the class index they read the logits with to `[0, V)`:
    an invalid label never reads out of bounds, checked or not.

    The pass is a dialect conversion: the train compute ops (`cross_entropy`,
    `cross_entropy_grad`, `global_norm`, `clip_by_global_norm`, `sgd`,
    `adamw`) are illegal after it, so one it cannot lower (a dynamic shape)
    is an error on that op, never left behind. The structural ops
    (`train.step`, `train.accumulate`, `train.checkpoint`,
    `train.all_reduce`) belong to their own passes and stay.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"
  ];
}

#endif // GA_CONVERSION_PASSES_TD
