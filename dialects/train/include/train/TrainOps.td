//===- TrainOps.td - Operations of the train dialect -------*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRAIN_TRAINOPS_TD
#define GA_TRAIN_TRAINOPS_TD

include "train/TrainDialect.td"
include "train/TrainEnums.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, traits>;

/// A 0-d tensor of any element type (a scalar carried as a tensor).
def Train_ScalarTensor : 0DTensorOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// train.step
//===----------------------------------------------------------------------===//

def Train_StepOp : Train_Op<"step", [
    IsolatedFromAbove, SingleBlock, RecursiveMemoryEffects,
    AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "One training step on the full batch";
  let description = [{
    `train.step` describes ONE training step on the FULL batch. The body is
    written with full-batch shapes; its block arguments are the parameters
    followed by the batch operands, with the operands' types. The body ends in
    `train.yield` of the loss (a 0-d float tensor) followed by any auxiliary
    outputs (for example the number of valid tokens).

    Results: the loss, then one gradient of the loss per parameter (with the
    parameter's type), then the auxiliary outputs. Before `train-differentiate`
    runs, the gradients are defined by the body: they are what reverse-mode
    differentiation of the loss with respect to each parameter gives.

    Two attributes say how to *execute* the step and never change its results
    (beyond floating-point reassociation):

    * `microbatches = k` (default 1): run the body on k slices of the batch,
      one after another, accumulating (gradient accumulation);
    * `data_parallel = r` (default 1): run on r ranks, each holding B/r of the
      batch, and sum across ranks;
    * `shard = s` (default 0): what each of the r ranks holds 1/r of
      (docs/distributed.md): 0, nothing (every rank holds everything); 1,
      the optimizer's state (the moments of `train.adamw`); 2, also the
      gradients that the optimizer reads (a reduce-scatter replaces their
      all-reduce); 3, also the parameters (each rank holds its shard,
      gathered whole right before each operation that reads it). With r = 1
      it changes nothing.

    Dimension 0 of every batch operand is the batch dimension: all batch
    operands have rank >= 1, the same static dimension 0 `B`, and `B` is
    divisible by `microbatches * data_parallel`. Parameters are float tensors.

    Example:

    ```mlir
    %loss, %gw = train.step params(%w : tensor<4x3xf32>)
        batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
        attributes {microbatches = 2 : i64}
        -> tensor<f32> grads(tensor<4x3xf32>) {
    ^bb0(%w_: tensor<4x3xf32>, %x_: tensor<8x4xf32>, %y_: tensor<8xi64>):
      %init = tensor.empty() : tensor<8x3xf32>
      %zero = arith.constant 0.0 : f32
      %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>)
          -> tensor<8x3xf32>
      %logits = linalg.matmul ins(%x_, %w_ : tensor<8x4xf32>, tensor<4x3xf32>)
          outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
      %l = train.cross_entropy mean %logits, %y_ ignore_index = -100
          : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
      train.yield %l : tensor<f32>
    }
    ```
  }];

  let arguments = (ins
    Variadic<AnyRankedTensor>:$params,
    Variadic<AnyRankedTensor>:$batch,
    DefaultValuedAttr<I64Attr, "1">:$microbatches,
    DefaultValuedAttr<I64Attr, "1">:$data_parallel,
    DefaultValuedAttr<I64Attr, "0">:$shard);
  let results = (outs
    AnyRankedTensor:$loss,
    Variadic<AnyRankedTensor>:$grads,
    Variadic<AnyRankedTensor>:$aux);
  let regions = (region SizedRegion<1>:$body);

  let assemblyFormat = [{
    (`params` `(` $params^ `:` type($params) `)`)?
    (`batch` `(` $batch^ `:` type($batch) `)`)?
    attr-dict-with-keyword
    `->` type($loss)
    (`grads` `(` type($grads)^ `)`)?
    (`aux` `(` type($aux)^ `)`)?
    $body
  }];

  let builders = [
    // A step with one gradient per parameter and an entry block whose
    // arguments mirror `params` and `batch`; the caller fills the body and
    // ends it with train.yield of the loss and the auxiliary outputs.
    OpBuilder<(ins "::mlir::ValueRange":$params, "::mlir::ValueRange":$batch,
                   "::mlir::Type":$lossType, "::mlir::TypeRange":$auxTypes,
                   "int64_t":$microbatches, "int64_t":$dataParallel), [{
      ::llvm::SmallVector<::mlir::Type> gradTypes(params.getTypes());
      build($_builder, $_state, lossType, gradTypes, auxTypes, params, batch,
            microbatches, dataParallel);
      ::mlir::Block *entry = new ::mlir::Block();
      $_state.regions.front()->push_back(entry);
      for (::mlir::Value value : params)
        entry->addArgument(value.getType(), value.getLoc());
      for (::mlir::Value value : batch)
        entry->addArgument(value.getType(), value.getLoc());
    }]>
  ];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The entry block's arguments that stand for the parameters.
    ::mlir::Block::BlockArgListType getParamArgs();
    /// The entry block's arguments that stand for the batch operands.
    ::mlir::Block::BlockArgListType getBatchArgs();
    /// The global batch size B (dimension 0 of the batch operands), or
    /// std::nullopt when the step has no batch operand.
    std::optional<int64_t> getBatchSize();
    /// The terminator of the body.
    YieldOp getYield();
  }];
}

//===----------------------------------------------------------------------===//
// train.yield
//===----------------------------------------------------------------------===//

def Train_YieldOp : Train_Op<"yield", [
    Pure, Terminator, ReturnLike,
    ParentOneOf<["StepOp", "CheckpointOp", "AccumulateOp"]>]> {
  let summary = "Terminator of the train regions";
  let description = [{
    Ends the body of `train.step`, `train.checkpoint` and `train.accumulate`
    and gives the values that the enclosing operation's results are defined
    from (see each operation for what it expects).

    Example:

    ```mlir
    train.yield %loss, %count : tensor<f32>, tensor<i64>
    ```
  }];

  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

//===----------------------------------------------------------------------===//
// train.cross_entropy
//===----------------------------------------------------------------------===//

def Train_CrossEntropyOp : Train_Op<"cross_entropy", [Pure]> {
  let summary = "Token-level softmax cross-entropy with ignored labels";
  let description = [{
    The softmax cross-entropy of `logits` [N, V] (float) against integer
    `labels` [N]. A token whose label equals `ignore_index` (default -100) is
    *ignored*: its loss is 0 and it is not counted. With `n` the number of
    valid (non-ignored) tokens and `l_i = logsumexp(logits[i]) -
    logits[i, labels[i]]`:

    * `reduction = none`: the result is the per-token loss [N] (0 where
      ignored);
    * `reduction = sum`: the result is `sum_i l_i` (0-d);
    * `reduction = mean`: the result is `(sum_i l_i) / n` (0-d). This is the
      reduction that gradient accumulation gets wrong when each micro-batch
      divides by its own `n`; `train-normalize-loss` rewrites it into a sum
      divided by the count of the whole global batch. When `n = 0` the mean is
      defined as 0 (the sum is 0 as well), not NaN.

    The optional second result is `n`, the number of valid tokens, as a 0-d
    integer or float tensor.

    With `reduction = sum`, an optional `init` (0-d, the loss's type) is the
    value the sum starts from: the result is `init + l_0 + l_1 + ...`, added
    in token order. `train-differentiate` uses it to continue a micro-batch
    loop's running loss in place (see `train.accumulate`), so that the
    micro-batches' sum is the full batch's, bit for bit.

    A label that is neither `ignore_index` nor in `[0, V)` is invalid. The
    lowering never reads out of bounds for it (the index it reads with is
    clamped to `[0, V)`), and `train-check-labels` (in `--ga-pipeline`
    unless `check-labels=false`) reports it at run time through
    `train.check_labels`.

    Example:

    ```mlir
    %loss, %n = train.cross_entropy mean %logits, %labels ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>) -> (tensor<f32>, tensor<i64>)
    // The running sum %acc plus this batch's token losses.
    %sum = train.cross_entropy sum %logits, %labels init(%acc)
        ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>, tensor<f32>) -> tensor<f32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$logits,
    AnyRankedTensor:$labels,
    Optional<AnyRankedTensor>:$init,
    Train_ReductionAttr:$reduction,
    DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs
    AnyRankedTensor:$loss,
    Optional<AnyRankedTensor>:$count);

  let assemblyFormat = [{
    $reduction $logits `,` $labels (`init` `(` $init^ `)`)? `ignore_index` `=`
    $ignore_index attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.cross_entropy_grad
//===----------------------------------------------------------------------===//

def Train_CrossEntropyGradOp : Train_Op<"cross_entropy_grad", [Pure]> {
  let summary = "Gradient of train.cross_entropy with respect to the logits";
  let description = [{
    The adjoint of `train.cross_entropy` that `train-differentiate` emits:
    given the cotangent `dloss` of the loss (0-d for `sum`/`mean`, [N] for
    `none`), the gradient with respect to `logits` [N, V] is

    `dlogits[i, j] = s_i * (softmax(logits[i])[j] - (j == labels[i]))`

    with `s_i = dloss` (sum), `dloss / n` (mean, `n` the number of valid
    tokens; 0 when `n = 0`) or `dloss[i]` (none), and `s_i = 0` for a token
    whose label is `ignore_index`: ignored tokens get exactly zero gradient.
    The attributes must match the differentiated `train.cross_entropy`.

    Example:

    ```mlir
    %dlogits = train.cross_entropy_grad mean %logits, %labels, %dloss
        ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>, tensor<f32>)
        -> tensor<128x64xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$logits,
    AnyRankedTensor:$labels,
    AnyRankedTensor:$dloss,
    Train_ReductionAttr:$reduction,
    DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs AnyRankedTensor:$dlogits);

  let assemblyFormat = [{
    $reduction $logits `,` $labels `,` $dloss `ignore_index` `=` $ignore_index
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.attention
//===----------------------------------------------------------------------===//

def Train_AttentionOp : Train_Op<"attention", [Pure]> {
  let summary = "Multi-head scaled dot-product attention over key tiles";
  let description = [{
    The attention of `query` [B, S, H, D] over `key` [B, T, H, D] and
    `value` [B, T, H, E] (batch, position, head, feature; all of one float
    type), head by head:

    * `s[b, h, i, j] = sum_d (query[b, i, h, d] * key[b, j, h, d]) * scale`
      (each product scaled, then summed over `d` in order);
    * with `key_mask` [B, T] (i1), `s[b, h, i, j] = masked_score` where
      `key_mask[b, j]` is false: padding that no query sees (a row that sees
      no key at all then weighs alike the keys the causal mask leaves it);
    * with `causal` (then `S = T`), `s[b, h, i, j] = -inf` where `j > i`: the
      keys after a query are no part of its softmax (where a row sees a key,
      the same as any `masked_score` that its exponential rounds to zero);
    * `out[b, i, h, e] = sum_j softmax_j(s[b, h, i, :])[j] * value[b, j, h, e]`;
    * `lse[b, h, i] = log(sum_j exp(s[b, h, i, j]))`, the row's
      log-sum-exp, which the gradient (`train.attention_grad`) reads instead
      of the probabilities.

    `convert-train-to-linalg` computes it over tiles of `query_tile`
    queries and `key_tile` keys (online softmax, as flash attention does: a
    running maximum and sum per row, the partial output rescaled at each
    key tile), so that no `[B, H, S, T]` tensor is ever made: the largest is
    `[B, H, query_tile, key_tile]`; a causal attention visits only the
    tiles on and below the diagonal. A tile of 0 takes all queries or keys
    in one. `train-raise-attention`
    writes this op for the attention that ga-opt's generator and front end
    emit as linalg.

    Example:

    ```mlir
    %out, %lse = train.attention %q, %k, %v key_mask %seen
        {scale = 0.125 : f64, causal, masked_score = -1.0e9 : f64,
         key_tile = 64 : i64, query_tile = 64 : i64}
        : (tensor<8x1024x12x64xf32>, tensor<8x1024x12x64xf32>,
           tensor<8x1024x12x64xf32>, tensor<8x1024xi1>)
        -> (tensor<8x1024x12x64xf32>, tensor<8x12x1024xf32>)
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    Optional<AnyRankedTensor>:$key_mask,
    F64Attr:$scale,
    UnitAttr:$causal,
    DefaultValuedAttr<F64Attr, "-1.0e9">:$masked_score,
    DefaultValuedAttr<I64Attr, "0">:$key_tile,
    DefaultValuedAttr<I64Attr, "0">:$query_tile);
  let results = (outs AnyRankedTensor:$out, AnyRankedTensor:$lse);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`key_mask` $key_mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.attention_grad
//===----------------------------------------------------------------------===//

def Train_AttentionGradOp : Train_Op<"attention_grad",
                                    [Pure, AttrSizedOperandSegments]> {
  let summary = "Gradient of train.attention, recomputed over key tiles";
  let description = [{
    The adjoint of `train.attention` that `train-differentiate` emits: given
    the forward's operands, its results `out` and `lse`, the cotangent
    `dout` of `out` and optionally `dlse` of `lse`, the gradients with
    respect to `query`, `key` and `value`. With `p = exp(s - lse)` the
    probabilities (recomputed, tile by tile, from the query, the keys and
    `lse`) and `delta[b, h, i] = sum_e dout[b, i, h, e] * out[b, i, h, e] -
    dlse[b, h, i]`:

    * `dvalue[b, j, h, e] = sum_i p[b, h, i, j] * dout[b, i, h, e]`;
    * `ds[b, h, i, j] = p[b, h, i, j] * (sum_e dout[b, i, h, e] *
      value[b, j, h, e] - delta[b, h, i])` (zero where masked: a masked
      score is the constant `masked_score`);
    * `dquery[b, i, h, d] = sum_j ds[b, h, i, j] * key[b, j, h, d] * scale`,
      `dkey[b, j, h, d] = sum_i ds[b, h, i, j] * query[b, i, h, d] * scale`.

    The attributes and `key_mask` must match the differentiated
    `train.attention`; like it, the lowering holds at most `[B, H,
    query_tile, key_tile]` at a time (its loop runs over the key tiles, and
    for each over the query tiles that see them).

    Example:

    ```mlir
    %dq, %dk, %dv = train.attention_grad %q, %k, %v, %out, %lse, %dout
        {scale = 0.125 : f64, causal, key_tile = 64 : i64,
         query_tile = 64 : i64}
        : (tensor<8x1024x12x64xf32>, tensor<8x1024x12x64xf32>,
           tensor<8x1024x12x64xf32>, tensor<8x1024x12x64xf32>,
           tensor<8x12x1024xf32>, tensor<8x1024x12x64xf32>)
        -> (tensor<8x1024x12x64xf32>, tensor<8x1024x12x64xf32>,
            tensor<8x1024x12x64xf32>)
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    AnyRankedTensor:$out,
    AnyRankedTensor:$lse,
    AnyRankedTensor:$dout,
    Optional<AnyRankedTensor>:$dlse,
    Optional<AnyRankedTensor>:$key_mask,
    F64Attr:$scale,
    UnitAttr:$causal,
    DefaultValuedAttr<F64Attr, "-1.0e9">:$masked_score,
    DefaultValuedAttr<I64Attr, "0">:$key_tile,
    DefaultValuedAttr<I64Attr, "0">:$query_tile);
  let results = (outs AnyRankedTensor:$dquery, AnyRankedTensor:$dkey,
                      AnyRankedTensor:$dvalue);

  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $lse `,` $dout (`,` $dlse^)?
    (`key_mask` $key_mask^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.checkpoint
//===----------------------------------------------------------------------===//

def Train_CheckpointOp : Train_Op<"checkpoint", [
    IsolatedFromAbove, SingleBlock, RecursiveMemoryEffects]> {
  let summary = "A region recomputed in the backward pass instead of saved";
  let description = [{
    Rematerialization, like `torch.utils.checkpoint`: the values computed
    inside the region are *not* saved for the backward pass; only the
    region's inputs are, and the backward pass recomputes the region from
    them. The region is isolated from above, so its inputs are exactly its
    operands: they appear as the entry block's arguments (same types), and
    `train.yield` gives the results.

    Checkpointing never changes values: a step with and without
    `train.checkpoint` regions computes bitwise identical results. It trades
    memory (activations not kept) for time (the forward of the region runs
    twice). Users write it, or `train-plan-remat` inserts it to fit a memory
    budget; `train-inline-checkpoints` removes it.

    Example:

    ```mlir
    %h = train.checkpoint (%x, %w : tensor<8x4xf32>, tensor<4x4xf32>)
        -> tensor<8x4xf32> {
    ^bb0(%x_: tensor<8x4xf32>, %w_: tensor<4x4xf32>):
      %e = tensor.empty() : tensor<8x4xf32>
      %y = linalg.matmul ins(%x_, %w_ : tensor<8x4xf32>, tensor<4x4xf32>)
          outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
      train.yield %y : tensor<8x4xf32>
    }
    ```
  }];

  let arguments = (ins Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);

  let assemblyFormat = [{
    (`(` $inputs^ `:` type($inputs) `)`)?
    attr-dict-with-keyword
    (`->` type($results)^)?
    $body
  }];
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The terminator of the body.
    YieldOp getYield();
  }];
}

//===----------------------------------------------------------------------===//
// train.accumulate
//===----------------------------------------------------------------------===//

def Train_AccumulateOp : Train_Op<"accumulate", [
    IsolatedFromAbove, RecursiveMemoryEffects,
    AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "The explicit micro-batch loop of gradient accumulation";
  let description = [{
    What `train-split-batch` makes of a `train.step` with `microbatches = k`:
    the body runs k times, once per micro-batch, and the results are the
    *sums* over the micro-batches of what the body contributes.

    Operands: the parameters, the (full) batch operands, the *globals*
    (values computed once for the whole global batch before any micro-batch
    runs, such as the global valid-token count that makes a split exact) and,
    in the explicit form, the *accumulators*' initial values. The entry
    block's arguments are the parameters (same types), the micro-batch slices
    of the batch operands (dimension 0 is `B / k`, the other dimensions
    unchanged; slice `i` holds rows `[i*B/k, (i+1)*B/k)`), the globals (same
    types) and, in the explicit form, the running accumulators.

    The op has two forms.

    **Contributions** (no accumulators, no `finalize` region; what
    `train-split-batch` builds). The body yields either the micro-batch's
    loss contribution alone (a 0-d float tensor; the gradients are then
    those of the accumulated loss, made explicit by `train-differentiate`),
    or the loss contribution followed by one gradient contribution per
    parameter (with the parameter's type); then, in both forms, one
    contribution per *metric*. Metrics are sums over the batch that the step
    returns beside its loss (the summed loss, a count of correct
    predictions): they are accumulated like the loss, by addition (integer
    or float), and never differentiated. Results: the accumulated loss, then
    the accumulated gradients, then the accumulated metrics.

    **Explicit accumulators** (what `train-differentiate` makes of it). The
    op carries its accumulators as `scf.for` carries its iteration
    arguments: each starts from its operand, the body receives the running
    values after the globals and yields the next ones, computed in place
    (a gradient's reduction takes its accumulator as its init, a sum of
    losses starts from it), in micro-batch order 0, 1, ..., k-1. After the
    last micro-batch the `finalize` region runs once on the final
    accumulators (then the parameters and the globals) and yields the
    results: the loss (a sum divided by a global count, for instance, or two
    such quotients added), one gradient per parameter (a gradient with
    several contributions adds its accumulators, as the full batch adds its
    reductions), then the metrics. `train-lower-accumulate` turns this form
    into an `scf.for` followed by the `finalize` code; nothing in it is
    rediscovered.

    Example (contributions):

    ```mlir
    %loss, %gw = train.accumulate microbatches = 2
        params(%w : tensor<4x3xf32>)
        batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
        globals(%n : tensor<f32>)
        -> tensor<f32> grads(tensor<4x3xf32>) {
    ^bb0(%w_: tensor<4x3xf32>, %x_: tensor<4x4xf32>, %y_: tensor<4xi64>,
         %n_: tensor<f32>):
      ...
      train.yield %l : tensor<f32>
    }
    ```

    Example (explicit accumulators):

    ```mlir
    %loss, %gw = train.accumulate microbatches = 2
        params(%w : tensor<4x3xf32>)
        batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
        globals(%n : tensor<f32>)
        accumulators(%z, %zw : tensor<f32>, tensor<4x3xf32>)
        -> tensor<f32> grads(tensor<4x3xf32>) {
    ^bb0(%w_: tensor<4x3xf32>, %x_: tensor<4x4xf32>, %y_: tensor<4xi64>,
         %n_: tensor<f32>, %sum: tensor<f32>, %gsum: tensor<4x3xf32>):
      ...
      train.yield %sum_next, %gsum_next : tensor<f32>, tensor<4x3xf32>
    } finalize {
    ^bb0(%sum: tensor<f32>, %gsum: tensor<4x3xf32>, %w_: tensor<4x3xf32>,
         %n_: tensor<f32>):
      %l = ... %sum / %n_ ...
      train.yield %l, %gsum : tensor<f32>, tensor<4x3xf32>
    }
    ```
  }];

  let arguments = (ins
    Variadic<AnyRankedTensor>:$params,
    Variadic<AnyRankedTensor>:$batch,
    Variadic<AnyRankedTensor>:$globals,
    Variadic<AnyRankedTensor>:$accumulators,
    I64Attr:$microbatches);
  let results = (outs
    AnyRankedTensor:$loss,
    Variadic<AnyRankedTensor>:$grads,
    Variadic<AnyRankedTensor>:$metrics);
  let regions = (region SizedRegion<1>:$body, MaxSizedRegion<1>:$finalize);

  let assemblyFormat = [{
    `microbatches` `=` $microbatches
    (`params` `(` $params^ `:` type($params) `)`)?
    (`batch` `(` $batch^ `:` type($batch) `)`)?
    (`globals` `(` $globals^ `:` type($globals) `)`)?
    (`accumulators` `(` $accumulators^ `:` type($accumulators) `)`)?
    attr-dict-with-keyword
    `->` type($loss)
    (`grads` `(` type($grads)^ `)`)?
    (`metrics` `(` type($metrics)^ `)`)?
    $body
    (`finalize` $finalize^)?
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The entry block's arguments that stand for the parameters.
    ::mlir::Block::BlockArgListType getParamArgs();
    /// The entry block's arguments that stand for the micro-batch slices.
    ::mlir::Block::BlockArgListType getBatchArgs();
    /// The entry block's arguments that stand for the globals.
    ::mlir::Block::BlockArgListType getGlobalArgs();
    /// The entry block's arguments that stand for the running accumulators
    /// (explicit form; empty otherwise).
    ::mlir::Block::BlockArgListType getAccumulatorArgs();
    /// The terminator of the body.
    YieldOp getYield();
    /// Whether the op carries explicit accumulators and a finalize region.
    bool isExplicit() { return !getFinalize().empty(); }
    /// The terminator of the finalize region (explicit form).
    YieldOp getFinalizeYield();
  }];
}

//===----------------------------------------------------------------------===//
// train.all_reduce
//===----------------------------------------------------------------------===//

def Train_AllReduceOp : Train_Op<"all_reduce", [
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Combine a value across the data-parallel ranks";
  let description = [{
    Every rank contributes `input`; every rank receives the elementwise
    combination of all contributions. `sum` is what exact data parallelism
    uses (for the loss, the gradients and the global counts); `avg` (the sum
    divided by the number of ranks) exists for the naive lowering that
    reproduces the usual mistake, so that it can be measured.

    The operation communicates: it is not `Pure`, and every rank must execute
    the same sequence of `train.all_reduce` operations.

    Bufferization (`one-shot-bufferize`, through the op's external
    `BufferizableOpInterface` model) reduces in place in the input's buffer,
    which the analysis copies first when the input is read afterwards, and
    turns the op into a call of the runtime function
    `ga_all_reduce_<type>(memref<*x<type>>, i32 kind)` (`<type>` is `f32`,
    `f64`, `i32` or `i64`; `kind` is 0 for `sum`, 1 for `avg`), which
    `ga-run` implements with `MPI_Allreduce`.

    Example:

    ```mlir
    %g = train.all_reduce sum %local : tensor<64x32xf32>
    ```
  }];

  let arguments = (ins AnyRankedTensor:$input, Train_ReduceKindAttr:$kind);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.reduce_scatter
//===----------------------------------------------------------------------===//

def Train_ReduceScatterOp : Train_Op<"reduce_scatter"> {
  let summary = "Sum a vector across the ranks, each rank keeping its part";
  let description = [{
    Every one of the r data-parallel ranks contributes `input`, a vector of
    r * c elements; rank i receives elements [i * c, (i + 1) * c) of the
    elementwise sum of all contributions (`sum`; `avg` divides it by r).
    It is `train.all_reduce` followed by the rank's slice, moving half the
    bytes: sharded data parallelism (`train-shard-state`, stage 2) reduces
    the gradients with it.

    The operation communicates: it is not `Pure`, and every rank must execute
    the same sequence of collectives. Where the enclosing function has
    `train.data_parallel = r`, the verifier checks that the input has r times
    the result's elements.

    Bufferization (the op's external `BufferizableOpInterface` model) reads
    the input's buffer, allocates the result's and calls the runtime function
    `ga_reduce_scatter_<type>(memref<*x<type>> in, memref<*x<type>> out,
    i32 kind)` (`f32`, `f64`, `i32` or `i64`), which the CPU runtime
    implements with `MPI_Reduce_scatter_block` and the CUDA runtime with
    `ncclReduceScatter`.

    Example:

    ```mlir
    %part = train.reduce_scatter sum %grad : tensor<4096xf32> -> tensor<1024xf32>
    ```
  }];

  let arguments = (ins 1DTensorOf<[AnyType]>:$input,
                   Train_ReduceKindAttr:$kind);
  let results = (outs 1DTensorOf<[AnyType]>:$result);
  let assemblyFormat = [{
    $kind $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.all_gather
//===----------------------------------------------------------------------===//

def Train_AllGatherOp : Train_Op<"all_gather"> {
  let summary = "Concatenate every rank's part of a vector, on every rank";
  let description = [{
    Every one of the r data-parallel ranks contributes `input`, a vector of c
    elements; every rank receives the r * c elements of the contributions in
    rank order (rank i's at [i * c, (i + 1) * c)). Sharded data parallelism
    (`train-shard-state`) gathers the parameters that each rank updated with
    it.

    The operation communicates: it is not `Pure`, and every rank must execute
    the same sequence of collectives. Where the enclosing function has
    `train.data_parallel = r`, the verifier checks that the result has r
    times the input's elements.

    Bufferization allocates the result's buffer and calls the runtime
    function `ga_all_gather_<type>(memref<*x<type>> in, memref<*x<type>>
    out)` (`f32`, `f64`, `i32` or `i64`), which the CPU runtime implements
    with `MPI_Allgather` and the CUDA runtime with `ncclAllGather`.

    Example:

    ```mlir
    %whole = train.all_gather %part : tensor<1024xf32> -> tensor<4096xf32>
    ```
  }];

  let arguments = (ins 1DTensorOf<[AnyType]>:$input);
  let results = (outs 1DTensorOf<[AnyType]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.rank
//===----------------------------------------------------------------------===//

def Train_RankOp : Train_Op<"rank", [Pure]> {
  let summary = "The data-parallel rank of this process";
  let description = [{
    The index of the rank that runs this code, in `[0, r)` for a program
    split over `r` data-parallel ranks by `train-split-batch`, which uses it
    to take the rank's rows of every batch operand. A process that is not
    part of a data-parallel run is rank 0.

    `convert-train-to-linalg` lowers it to a call of the runtime function
    `ga_rank() -> i64`, which `ga-run` provides (the MPI rank in
    `MPI_COMM_WORLD`).

    Example:

    ```mlir
    %rank = train.rank : index
    ```
  }];

  let results = (outs Index:$rank);
  let assemblyFormat = "attr-dict `:` type($rank)";
}

//===----------------------------------------------------------------------===//
// train.stop_gradient
//===----------------------------------------------------------------------===//

def Train_StopGradientOp : Train_Op<"stop_gradient", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "A value that differentiation treats as a constant";
  let description = [{
    Its operand, unchanged, through which no gradient flows:
    `train-differentiate` treats the result as a constant (it is never
    active, and nothing is added to the operand's adjoint), as PyTorch's
    `.detach()` does. `ga-import` imports `.detach()` in a model or a loss
    as this op.

    The value still depends on whatever the operand depends on: the
    decomposability analysis classifies the result as its operand (a
    detached function of the parameters is parameter-dependent, and a split
    needs its full batch's value as before). `convert-train-to-linalg`
    replaces it with its operand, after differentiation.

    Example: a loss divided by its own detached magnitude, whose gradient is
    that of the numerator alone.

    ```mlir
    %n = train.stop_gradient %norm : tensor<f32>
    ```
  }];

  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// train.check_labels
//===----------------------------------------------------------------------===//

def Train_CheckLabelsOp : Train_Op<"check_labels", [
    MemoryEffects<[MemWrite]>]> {
  let summary = "Report labels outside [0, num_classes) that are not ignored";
  let description = [{
    Checks every element of `labels` (or of the box `offsets`, `sizes`,
    `strides` of it, as `tensor.extract_slice` takes it) against
    `[0, num_classes)` and `ignore_index`. The first invalid label, in
    row-major order, is reported to the runtime's error path
    (`ga_report_error`, see `ga/Runtime/Errors.h`) with its row-major
    position in `labels`, its value and `argument`, the index of the
    function argument that `labels` is (-1 when the labels are computed).
    The op has no result and does not stop the step: a caller that finds a
    reported error discards the step's results (`ga-run` exits with status
    1 and writes nothing).

    `train-check-labels` inserts it at the start of a function, on the
    argument that every `train.cross_entropy` reads its labels from; the
    cross-entropy lowerings themselves clamp the index they read with, so
    an invalid label never reads out of bounds, checked or not.
    `convert-train-to-linalg` lowers it to one `linalg.generic` reduction
    (the first invalid position) and a call under `scf.if`.

    Example (the next-token labels of a `[8, 16]` argument: columns 1..15):

    ```mlir
    train.check_labels %labels num_classes = 32 ignore_index = -100
        argument = 16 offsets = [0, 1] sizes = [8, 15] strides = [1, 1]
        : tensor<8x16xi64>
    ```
  }];

  let arguments = (ins
    RankedTensorOf<[AnySignlessInteger]>:$labels,
    I64Attr:$num_classes,
    I64Attr:$ignore_index,
    OptionalAttr<I64Attr>:$argument,
    OptionalAttr<DenseI64ArrayAttr>:$offsets,
    OptionalAttr<DenseI64ArrayAttr>:$sizes,
    OptionalAttr<DenseI64ArrayAttr>:$strides);
  let assemblyFormat = [{
    $labels `num_classes` `=` $num_classes `ignore_index` `=` $ignore_index
    (`argument` `=` $argument^)?
    (`offsets` `=` $offsets^)? (`sizes` `=` $sizes^)?
    (`strides` `=` $strides^)? attr-dict `:` type($labels)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.global_norm
//===----------------------------------------------------------------------===//

def Train_GlobalNormOp : Train_Op<"global_norm", [Pure]> {
  let summary = "The L2 norm of a list of tensors taken as one vector";
  let description = [{
    `sqrt(sum over all inputs of sum(x^2))`, the global gradient norm that
    users watch (and that gradient clipping uses). Inputs are float tensors;
    the result is a 0-d float tensor.

    Example:

    ```mlir
    %norm = train.global_norm %g1, %g2 : tensor<32x64xf32>, tensor<64xf32>
        -> tensor<f32>
    ```
  }];

  let arguments = (ins Variadic<AnyRankedTensor>:$inputs);
  let results = (outs AnyRankedTensor:$norm);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($norm)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.clip_by_global_norm
//===----------------------------------------------------------------------===//

def Train_ClipByGlobalNormOp : Train_Op<"clip_by_global_norm", [
    Pure,
    RangedTypesMatchWith<"clipped values have the types of the inputs",
                         "inputs", "clipped", "$_self">]> {
  let summary = "Scale a list of tensors so that their global norm is bounded";
  let description = [{
    With `n = global_norm(inputs)`, every input is multiplied by
    `min(1, max_norm / (n + 1e-6))`, as `torch.nn.utils.clip_grad_norm_`
    does. Results: the clipped tensors (same types as the inputs), then the
    norm *before* clipping (a 0-d float tensor), which is what users log.
    `max_norm` must be positive.

    Example:

    ```mlir
    %c1, %c2, %norm = train.clip_by_global_norm %g1, %g2 max_norm = 1.0
        : tensor<32x64xf32>, tensor<64xf32> -> tensor<f32>
    ```
  }];

  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, F64Attr:$max_norm);
  let results = (outs Variadic<AnyRankedTensor>:$clipped,
                      AnyRankedTensor:$norm);
  let assemblyFormat = [{
    $inputs `max_norm` `=` $max_norm attr-dict
    `:` type($inputs) `->` type($norm)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.sgd
//===----------------------------------------------------------------------===//

def Train_SgdOp : Train_Op<"sgd", [
    Pure, AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "Stochastic gradient descent update of one parameter";
  let description = [{
    `new_param = param - lr * (grad + weight_decay * param)`.

    One operation per parameter tensor: the types stay inferable, and each
    update lowers to one elementwise kernel. `lr` is an operand (a 0-d float
    tensor) so that a learning-rate schedule does not force a recompilation.
    `weight_decay` (default 0) must be non-negative.

    Example:

    ```mlir
    %w2 = train.sgd %w, %gw, %lr : tensor<32x64xf32>, tensor<f32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$param, AnyRankedTensor:$grad, AnyRankedTensor:$lr,
    DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs AnyRankedTensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr attr-dict `:` type($param) `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.adamw
//===----------------------------------------------------------------------===//

def Train_AdamWOp : Train_Op<"adamw", [
    Pure,
    AllTypesMatch<["param", "grad", "new_param"]>,
    AllTypesMatch<["m", "v", "new_m", "new_v"]>]> {
  let summary = "AdamW update of one parameter and its two moments";
  let description = [{
    The AdamW update (decoupled weight decay) of `torch.optim.AdamW`, with
    `t = step` (1 for the first step):

    ```
    new_m     = beta1 * m + (1 - beta1) * grad
    new_v     = beta2 * v + (1 - beta2) * grad^2
    m_hat     = new_m / (1 - beta1^t)
    v_hat     = new_v / (1 - beta2^t)
    new_param = param * (1 - lr * weight_decay)
                - lr * m_hat / (sqrt(v_hat) + eps)
    ```

    The moments `m` and `v` have the parameter's shape; their element type may
    be wider than the parameter's (f32 moments for bf16 parameters). `lr` is
    a 0-d float tensor, `step` a 0-d integer or float tensor. Defaults:
    `beta1 = 0.9`, `beta2 = 0.999`, `eps = 1e-8`, `weight_decay = 0.01`;
    betas must lie in [0, 1), `eps` must be positive, `weight_decay`
    non-negative.

    Example:

    ```mlir
    %w2, %m2, %v2 = train.adamw %w, %gw, %m, %v, %lr, %t {weight_decay = 0.1}
        : tensor<32x64xf32>, tensor<32x64xf32>, tensor<f32>, tensor<i64>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$param, AnyRankedTensor:$grad,
    AnyRankedTensor:$m, AnyRankedTensor:$v,
    AnyRankedTensor:$lr, AnyRankedTensor:$step,
    DefaultValuedAttr<F64Attr, "0.9">:$beta1,
    DefaultValuedAttr<F64Attr, "0.999">:$beta2,
    DefaultValuedAttr<F64Attr, "1e-8">:$eps,
    DefaultValuedAttr<F64Attr, "0.01">:$weight_decay);
  let results = (outs
    AnyRankedTensor:$new_param, AnyRankedTensor:$new_m,
    AnyRankedTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $lr `,` $step attr-dict
    `:` type($param) `,` type($m) `,` type($lr) `,` type($step)
  }];
  let hasVerifier = 1;
}

#endif // GA_TRAIN_TRAINOPS_TD
