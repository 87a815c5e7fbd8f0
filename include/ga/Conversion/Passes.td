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

    `train.attention` and `train.attention_grad` become loops over tiles
    of queries and keys (online softmax), or, with `attention-calls`, one
    call each of the runtime's fused attention on the operands' buffers
    (`ga_attention_fwd_<t>`, `ga_attention_bwd_<t>`; the CUDA target's
    device code calls cuDNN's instead): see
    [Memory](../memory.md#attention-without-its-scores).

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
  let options = [
    Option<"attentionCalls", "attention-calls", "std::string", /*default=*/"",
           "train.attention and train.attention_grad as one call each of "
           "the runtime's fused attention (empty: over tiles, in linalg): "
           "native (at the operands' type) or bf16 (float32 operands "
           "rounded to bfloat16 for the call, the statistics float32)">,
    Option<"attentionCallMasks", "attention-call-masks", "bool",
           /*default=*/"true",
           "the fused attention takes key masks (else a masked attention "
           "stays over tiles)">,
    Option<"attentionCallDlse", "attention-call-dlse", "bool",
           /*default=*/"true",
           "the fused backward takes the log-sum-exp's cotangent (else "
           "such a gradient stays over tiles)">,
    Option<"reportAttention", "report-attention", "bool", /*default=*/"false",
           "a remark at each train.attention and train.attention_grad: "
           "the fused call, or tiles and why not the call">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def TrainLowerAccumulatePass : Pass<"train-lower-accumulate"> {
  let summary = "Lower train.accumulate loops with explicit accumulators to "
                "scf.for";
  let description = [{
    Turns every `train.accumulate` in its explicit form (after
    `train-differentiate`: accumulators and a `finalize` region) into an
    `scf.for` over the micro-batches whose iteration arguments are the
    accumulators, followed by the finalize code. The body is cloned once,
    with the micro-batch slices of the batch operands (rows
    `[i * B/k, (i + 1) * B/k)`) for its batch arguments; nothing is matched
    or rewritten. The accumulation in place is the body's own:
    `train-differentiate` made each gradient contribution continue its
    accumulator (the reductions take it as their init, a stacked gradient's
    slices are computed into the accumulator's slices, an embedding's
    scatter-add starts from it) and each loss sum start from its own. So no
    per-micro-batch gradient buffer exists, and every element is summed in
    the same order as in the full-batch step: a micro-batch split on the CPU
    is bitwise identical to the full-batch run.

    Refused, with an error on the op: the contribution form (run
    `train-differentiate` first), and a train op left in the body or the
    finalize region (`train.cross_entropy` before `convert-train-to-linalg`,
    a `train.checkpoint` before `train-inline-checkpoints`), since lowering
    it inside the loop later would not be in the micro-batch's order.

    Example (one parameter, k = 2; the gradient matmul accumulates into the
    loop's running gradient, the loss is divided by the global count once):

    ```mlir
    %r:2 = scf.for %i = %c0 to %c2 step %c1
        iter_args(%sum = %zero, %gacc = %zeros) -> (tensor<f32>, tensor<4x3xf32>) {
      %x_i = tensor.extract_slice %x[%off, 0, 0] [4, 5, 4] [1, 1, 1] ...
      ...
      %g = linalg.matmul ... outs(%gacc : tensor<4x3xf32>) -> tensor<4x3xf32>
      scf.yield %s, %g : tensor<f32>, tensor<4x3xf32>
    }
    %loss = linalg.generic ins(%r#0, %count : tensor<f32>, tensor<f32>) ...
    ```
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
  ];
}

#endif // GA_CONVERSION_PASSES_TD
