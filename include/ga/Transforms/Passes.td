//===- Passes.td - ga-opt transformation passes ------------*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRANSFORMS_PASSES_TD
#define GA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// The target-independent passes, in the order ga-pipeline runs them
// (convert-train-to-linalg, between train-inline-checkpoints and
// train-lower-accumulate, is in Conversion/Passes.td; code generation for
// both targets in Codegen/{Common,CPU,CUDA}/Passes.td)
//===----------------------------------------------------------------------===//

def GaSliceMatmulRowsPass : Pass<"ga-slice-matmul-rows"> {
  let summary = "Compute only the rows of a matmul that a slice reads";
  let description = [{
    A `linalg.matmul` (rows of the result from rows of the left operand)
    whose result is read only by a `tensor.extract_slice` of some of its rows
    (every column, unit strides), directly or through a
    `tensor.expand_shape` that splits the rows into leading dimensions,
    becomes a matmul of the same rows of its left operand (sliced the same
    way and flattened). Each computed row is the same dot products, so the
    values are bitwise unchanged; the rows nobody reads are not computed.

    The case it is for: a causal language model's next-token loss reads the
    logits of positions 0..S-2. The LM head's `[B*S, V]` logits, expanded to
    `[B, S, V]` and sliced to `[B, S-1, V]`, become the head applied to the
    sliced hidden states: the logits are then a whole tensor, which the
    cross-entropy's gradient overwrites (`convert-train-to-linalg`), so the
    differentiated step never holds a second `[N, V]` tensor.

    ```mlir
    %l = linalg.matmul ins(%h, %w : tensor<32x8xf32>, tensor<8x100xf32>)
        outs(%zero : tensor<32x100xf32>) -> tensor<32x100xf32>
    %e = tensor.expand_shape %l [[0, 1], [2]] output_shape [4, 8, 100]
        : tensor<32x100xf32> into tensor<4x8x100xf32>
    %s = tensor.extract_slice %e[0, 0, 0] [4, 7, 100] [1, 1, 1]
        : tensor<4x8x100xf32> to tensor<4x7x100xf32>
    ```

    becomes the matmul of `%h` expanded to `[4, 8, 8]`, sliced to
    `[4, 7, 8]` and collapsed to `[28, 8]`, into a fill of `[28, 100]`,
    expanded to `[4, 7, 100]`. The first stage of `--ga-pipeline`
    (option `slice-matmul-rows`, on by default).
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
}

def TrainRaiseAttentionPass : Pass<"train-raise-attention"> {
  let summary = "Raise causal multi-head attention written in linalg to train.attention";
  let description = [{
    Finds attention written as linalg (the form of ga-opt's generator,
    `examples/gen_tiny_gpt.py`, and the importer's: nanoGPT's `masked_fill`
    attention and `scaled_dot_product_attention`, transformers' GPT-2, Llama
    with grouped-query keys and values, BERT): the scores, a contraction of
    the queries and keys over the features, each product scaled; optionally
    a mask; the softmax over the keys; and the contraction of the
    probabilities with the values. When every intermediate is used only by
    the next step, the chain becomes one `train.attention`, whose lowering
    never makes the `[B, H, S, T]` scores (online softmax over tiles of
    keys) and whose gradient recomputes them tile by tile instead of saving
    the probabilities for the backward pass.

    ```mlir
    %s = linalg.generic {...} ins(%q, %k) outs(%zero)      // sum_d q k * scale
    %m = linalg.generic {...} ins(%s) outs(%e0)            // j > i ? -1e9 : s
    %mx = linalg.generic {...} ins(%m) outs(%lowest)       // max over j
    %x = linalg.generic {...} ins(%m, %mx) outs(%e1)       // exp(m - mx)
    %sum = linalg.generic {...} ins(%x) outs(%zero1)       // sum over j
    %p = linalg.generic {...} ins(%x, %sum) outs(%e2)      // x / sum
    %o = linalg.generic {...} ins(%p, %v) outs(%zero2)     // sum_j p v
    ```

    becomes `%o, %lse = train.attention %q, %k, %v {scale = ..., causal,
    masked_score = -1.0e9, key_tile = ...}`.

    A mask, a condition or a tensor added to the scores, is traced to a
    function of the position and of at most one i1 `[B, T]` tensor read at
    `(b, j)` (the batch's attention mask, which becomes the op's
    `key_mask`) and evaluated at every position: the keys seen must be
    exactly `j <= i` (causal) or every key where the key mask is true.
    Anything else stays as written. The key tile is the largest divisor of
    the key count not above `key-tile`, the query tile that of the query
    count; the values change by the online softmax's roundings.

    In `--ga-pipeline` with `attention=tiles` or `attention=library` (or
    `attention-key-tile=N`, N > 0; `attention=tiles` is target=cuda's
    default), before the remat planner. The forms raised, the mask's tracing and the measurements:
    [Memory](../memory.md#attention-without-its-scores) (docs/memory.md).
}];
  let options = [
    Option<"keyTile", "key-tile", "int64_t", /*default=*/"128",
           "the most queries and keys per tile of the online softmax">,
    Option<"report", "report", "bool", /*default=*/"false",
           "a remark at each attention raised, and at each softmax over "
           "rank-4 scores left as written (not a form the pass recognizes)">
  ];
  let dependentDialects = ["::ga::train::TrainDialect"];
}

def TrainRecordSignaturesPass : Pass<"train-record-signatures", "::mlir::ModuleOp"> {
  let summary = "Record each function's tensor signature for ga-run";
  let description = [{
    Attaches to every `func.func` with a body its tensor-level signature
    (`train.signature`, a function type) and, when its results come from a
    `train.step`, which results are the loss (`train.loss_result`) and the
    gradients (`train.gradient_results`). The attributes survive lowering to the
    LLVM dialect, so `ga-run` can run already-lowered IR: it reads and writes
    `.npy` files with these shapes and reports the loss and the gradient
    norm. The first stage of `--ga-pipeline`.

    Example: for `examples/mlp.mlir`, `ga-opt --train-record-signatures`
    gives `@mlp_step` the attributes

    ```mlir
    train.gradient_results = array<i64: 1, 2, 3>, train.loss_result = 0 : i64,
    train.signature = (tensor<32x64xf32>, ...) -> (tensor<f32>, ...)
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TrainCheckLabelsPass : Pass<"train-check-labels", "::mlir::func::FuncOp"> {
  let summary = "Check cross-entropy labels at run time, before they are used";
  let description = [{
    For every `train.cross_entropy` (and `train.cross_entropy_grad`) of a
    function, follows its labels back to the function argument they are read
    from, through the block arguments of `train.step` and
    `train.checkpoint`, `tensor.collapse_shape` / `tensor.expand_shape`
    (which keep the row-major order) and static, rank-preserving
    `tensor.extract_slice` (the shifted labels of a next-token loss). It
    inserts one `train.check_labels` on that argument, with the box the loss
    reads, at the start of the function: the labels are checked once per
    call, before anything uses them, whatever the micro-batch split and the
    rank. An invalid label is reported with the argument's index, its
    position in the argument and its value (`ga-run` exits with status 1).

    Labels that do not come from a function argument this way (computed
    labels, or labels of a step that was split already: run this pass
    before `train-split-batch`) are checked where the loss reads them when
    the loss is directly in the function body, and otherwise get a warning:
    such a label is clamped by the lowering (never read out of bounds) but
    not reported.

    Checks already present are not inserted again, so the pass can run
    twice.

    Example: with `%labels: tensor<8x16xi64>` argument #4 and

    ```mlir
    %flat = tensor.collapse_shape %blabels [[0, 1]]
        : tensor<8x16xi64> into tensor<128xi64>
    %l = train.cross_entropy mean %logits, %flat ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>) -> tensor<f32>
    ```

    inside a `train.step`, the function starts with

    ```mlir
    train.check_labels %labels num_classes = 64 ignore_index = -100
        argument = 4 : tensor<8x16xi64>
    ```
  }];
  let dependentDialects = ["::ga::train::TrainDialect"];
}

def GaLegalizeImportPass : Pass<"ga-legalize-import"> {
  let summary = "Bring a front end's linalg into the forms ga-opt's passes "
                "take, values unchanged";
  let description = [{
    Linalg on tensors from a front end (torch-mlir's FX importer, through
    `ga-import`) says the computations of ga-opt's own inputs in forms that
    its analyses and autodiff do not take. This pass rewrites them into the
    same computation (the same scalar operations on the same elements):

    - *Unit maps.* An operand of extent 1 read through the constant 0
      (`(d0, d1, d2) -> (d0, d1, 0)`, the keepdim statistics of a softmax or
      a layer norm) is collapsed with `tensor.collapse_shape` and read
      without that dimension; an output written so is collapsed, and its
      result expanded back.
    - *Dead results.* A result of a multi-result `linalg.generic` that
      nothing reads (the argmax that torch-mlir computes beside every max)
      is dropped, with the body's operations that only it needed, when the
      other results do not read its elements.
    - *Splats.* An input that is a splat constant becomes a scalar constant
      of the body.
    - *Broadcasts.* The `linalg.generic` consumers of a linalg operation
      that only copies an input into a `tensor.empty` (a generic that yields
      an input, `linalg.broadcast`, `linalg.transpose`: a bias or a weight
      repeated over the batch's rows) read the source through the composed
      map, so that a value with the batch's shape that does not depend on
      the batch is never materialized (a batch split cannot slice it).
    - *Transposed operands.* A `linalg.matmul` or `linalg.batch_matmul` of
      a `linalg.transpose` (the weight of `nn.Linear`) reads the transpose's
      input through a transposed indexing map: the weight's gradient is then
      a product computed in the weight's own layout, which a micro-batch
      split accumulates in place (bit for bit the full batch).
    - *Batch matmuls of a broadcast.* `linalg.batch_matmul(A, W broadcast
      over the batch)` becomes a `linalg.matmul` of `A`'s rows with `W`.
    - *Iotas.* An input that holds each element's index along a loop
      (`torch.arange`) becomes that loop's `linalg.index` in the body.
    - *Gathers at loop indices.* A `tensor.extract` whose indices are loop
      indices (through integer casts and the wrap of negative indices) is a
      read of the tensor through a map, sliced to the loops' extents: a
      position embedding at `arange` positions, the rows of an attention
      mask at `arange(B)`. Comparisons of a loop index with a constant that
      its extent decides (the gathers' bounds checks) fold, and so do the
      `cf.assert`s on them.
    - *Powers.* `math.fpowi` with a constant exponent becomes the
      multiplications by squaring that its lowering computes (the same
      bits); the vectorizer has no lowering for a vector of exponents.

    `--ga-pipeline` runs it first; `ga-import` runs it on every import. The
    forms torch-mlir emits and what takes each:
    [Importing](../importing.md#what-torch-mlir-emits-and-what-takes-it)
    (docs/importing.md); the rewrites' tests: `test/Transforms/legalize-import.mlir`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TrainCheckAssertsPass : Pass<"train-check-asserts", "::mlir::ModuleOp"> {
  let summary = "Turn cf.assert into checks on the runtime's error path, "
                "before the step";
  let description = [{
    Front ends put `cf.assert` into the functions they emit: torch-mlir
    checks the indices of its gathers inside `linalg.generic` bodies and
    the shapes of its operands at the function level. A compiled step must
    never abort the process, so every assert becomes a check whose failure
    goes to the runtime's error path (`ga_report_assertion`, see
    `ga/Runtime/Errors.h`): the caller gets a status and a message naming
    the assert's text and location (`ga-run` and `ga-exec` exit with status
    1, a step library returns `GA_ERROR_ASSERTION`), the same for the CPU
    and CUDA targets.

    - An assert inside a `linalg.generic` body becomes a reduction that
      finds the first iteration (row-major) where the condition is false;
      only the body's operations that the condition depends on are copied
      into it, and it loops over the dimensions they depend on (the ids of
      an embedding's gather, not its features). The message gives that
      position and the iteration space.
    - Any other assert is its condition, computed at the function level.

    The check is computed before the `train.step` that holds the assert,
    from the values the step reads (block arguments of `train.step` and
    `train.checkpoint` stand for their operands; operations without memory
    effects are copied). The step then carries no side effect: it is
    differentiated, split and planned as if the assert were not there. A
    condition that depends on something else (a loop's induction variable,
    an operation with memory effects) is refused at the assert. Asserts
    whose condition is the constant `true` are dropped. The step runs on
    after a failed check (its results are discarded, as after an invalid
    label), so the indices of the gathers (`tensor.extract`) in a body whose
    assert was removed are clamped into bounds: an invalid index never
    reads out of bounds. `--ga-pipeline` runs this pass first.

    With `report=false` (`check-asserts=false` in `--ga-pipeline`, for data
    validated already, or the CUDA driver stand-in, whose device memory
    holds no values) the asserts are dropped without a check; the gathers
    are clamped all the same.

    Example: the assert of an embedding's gather, `%id < 256` for the ids
    `tensor<4x8xi64>`, becomes before the step a reduction of the ids to the
    first position where it fails, reported as `'index out of range' at
    loc(...) over the iterations [4, 8] (dimensions 0, 1 of a linalg.generic
    over [4, 8, 64])`; the step's gather is clamped. What the user sees:
    [Importing](../importing.md) (docs/importing.md).
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"true",
           "Check each assert on the runtime's error path; false drops the "
           "asserts (their gathers are still clamped)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect"];
}

def TrainNormalizeLossPass : Pass<"train-normalize-loss"> {
  let summary = "Rewrite mean-reduced losses into a sum divided by a count "
                "computed from the labels";
  let description = [{
    In every `train.step` body, `train.cross_entropy {reduction = mean}`
    becomes the `sum` reduction divided by `max(count, 1)`, where `count` is
    a separate `linalg.generic` that counts the labels the loss consumes
    (those different from `ignore_index`, after any shift or slice of the
    labels: it reads the very labels operand of the loss). A batch with no
    valid token gives 0, as the mean does (`train.cross_entropy` defines the
    mean of zero tokens as 0).

    The count depends on the data alone, so the decomposability analysis
    classifies it as a global batch-sum and `train-split-batch` computes it
    once, for the whole global batch, before any micro-batch runs: each
    micro-batch then contributes its sum divided by the global count. A
    hand-written mean (a sum of masked per-token losses divided by the sum
    of the mask) needs no rewrite: its divisor is such a global already, and
    `train-split-batch` hoists it the same way. A size read from the batch
    dimension is a constant: shapes are static, and the body is written for
    the full batch.

    An optional count result of the cross-entropy is replaced by the new
    count (converted to its type); the count result of a `sum` or `none`
    cross-entropy is replaced too, by a count of the labels in its own
    element type, so that no count reads the logits (a split would otherwise
    compute the whole cross-entropy, and the logits, before the loop).
    `train-split-batch` runs this rewrite itself on every step it splits.

    Example:

    ```mlir
    %l = train.cross_entropy mean %logits, %labels ignore_index = -100
        : (tensor<32x3xf32>, tensor<32xi64>) -> tensor<f32>
    // becomes
    %count = linalg.generic {iterator_types = ["reduction"]}
        ins(%labels : tensor<32xi64>) outs(%zero : tensor<f32>) {
      ... arith.cmpi ne, %label, %c-100 ... arith.addf ...
    } -> tensor<f32>
    %sum = train.cross_entropy sum %logits, %labels ignore_index = -100
        : (tensor<32x3xf32>, tensor<32xi64>) -> tensor<f32>
    %l = linalg.generic ins(%sum, %count : tensor<f32>, tensor<f32>) ... {
      ... arith.maximumf %n, %one ... arith.divf %s, ...
    } -> tensor<f32>
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect", "::ga::train::TrainDialect",
  ];
}

def TrainShardStatePass : Pass<"train-shard-state", "::mlir::ModuleOp"> {
  let summary = "Keep 1/r of the optimizer's state (and gradients) per rank";
  let description = [{
    In every function split over `r > 1` ranks (`train.data_parallel = r`)
    whose step asked for `shard = s > 0` (`train.shard = s`, both recorded
    by `train-split-batch`), every rank keeps 1/r of what the stage names
    ([Distributed training](../distributed.md)):

    * each parameter of n elements is laid out flat and padded with zeros
      to r * c elements, c = ceil(n / r) (a shape that r does not divide is
      padded, never refused); rank i owns elements [i * c, (i + 1) * c);
    * stage 1, the optimizer's state: every `train.adamw` updates the rank's
      shard of its parameter with the shard of its gradient and moments of
      c elements (the function's moment arguments and results become
      `tensor<c x T>`), and `train.all_gather` gives every rank the whole
      updated parameter;
    * stage 2, also the gradients: the `train.all_reduce sum` of each
      gradient that an update reads becomes a `train.reduce_scatter sum`
      of the rank's accumulated gradient; a `train.clip_by_global_norm` of
      them takes the norm from the shards (the sum of their squares,
      summed across the ranks with one scalar `train.all_reduce`) and
      scales each shard. The accumulator across micro-batches stays whole.
    * stage 3, also the parameters: the function takes and returns the
      rank's shard of each parameter (`tensor<c x T>`, in its type and
      recorded signature), which the update reads and writes as it is;
      every other reader reads the whole parameter from a
      `train.all_gather` at the function's entry, which
      `train-gather-at-use` then moves before each operation that reads it.

    Each element of the update is computed from the same values as in the
    replicated step, so the parameters and the moments agree with it (stage
    1 bitwise; stage 2 up to the order of the ranks' sums; stage 3 bitwise
    stage 2).

    Errors (at the operation): an update whose parameter is not an argument
    of the function, whose moments are also read or returned elsewhere, a
    gradient (stage 2) that is not an all-reduced sum read by its update (or
    its clip) alone, at stage 3 a new parameter read by anything but the
    function's return or a parameter with two updates, a `train.sgd`
    update (it keeps no state to shard), and a step with
    `shard > 0` on more than one rank that `train-split-batch` has not split
    yet. A second run changes nothing.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::ga::train::TrainDialect",
  ];
}

def TrainShardAccumulatorsPass : Pass<"train-shard-accumulators", "::mlir::func::FuncOp"> {
  let summary = "Reduce-scatter each sharded gradient as soon as it is made, and accumulate the shards";
  let description = [{
    Sharded data parallelism at stage 2 and 3 (`train-shard-state`)
    reduce-scatters each gradient after the step has accumulated it whole,
    so that every rank still holds the whole gradient from its first write
    to the end of the step. This pass, run once the micro-batch loop is an
    `scf.for` (after `train-lower-accumulate`), keeps the whole gradient
    only while it is computed:

    - in a loop of constant bounds, an accumulator whose result is only
      reduce-scattered (through the flattening and padding of
      `train-shard-state`), that starts from zeros, and that the body only
      accumulates into (it reaches the yield only as the init of products
      and of generics that add to their init, through slices and nested
      loops of the same kind), becomes the rank's shard of `c` elements:
      each micro-batch computes its gradient from zeros of its own,
      reduce-scatters it right after its last write, and adds the shard to
      the accumulator, so a rank holds 1/r of the accumulated gradients;
    - a `train.reduce_scatter` of a value made in the same block (one
      micro-batch, where no loop is left) moves right after the value's
      definition, and the zeros that value accumulates from move right
      before their first reader: the whole gradient lives from its first
      write in the backward to its last.

    For example, on 2 ranks, a 4x3 weight's gradient accumulated over the
    micro-batch loop and reduce-scattered after it:

    ```mlir
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %zeros)
        -> (tensor<4x3xf32>) {
      %g = linalg.matmul ins(%x, %dy : ...) outs(%a : tensor<4x3xf32>)
          -> tensor<4x3xf32>
      scf.yield %g : tensor<4x3xf32>
    }
    %flat = tensor.collapse_shape %r [[0, 1]]
        : tensor<4x3xf32> into tensor<12xf32>
    %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
    ```

    becomes (where the estimate below allows it)

    ```mlir
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %zeros6)
        -> (tensor<6xf32>) {
      %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x3xf32>)
          -> tensor<4x3xf32>
      %g = linalg.matmul ins(%x, %dy : ...) outs(%z : tensor<4x3xf32>)
          -> tensor<4x3xf32>
      %flat = tensor.collapse_shape %g [[0, 1]]
          : tensor<4x3xf32> into tensor<12xf32>
      %gs = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
      %a2 = linalg.generic {...} ins(%gs : tensor<6xf32>)
          outs(%a : tensor<6xf32>) { ... arith.addf ... }
      scf.yield %a2 : tensor<6xf32>
    }
    ```

    and `%s` is `%r`.

    The second rewrite only moves code. The first sums each micro-batch's
    gradient across the ranks before it sums the micro-batches: the same
    examples' gradients are added, in another float32 order, so sharded
    steps with several micro-batches agree with the replicated step to
    rounding (stage 3 stays bitwise stage 2). An accumulator that does not
    match stays whole; a second run changes nothing. Every rank runs the
    same collectives in the same order.

    A loop's accumulators become shards only where that saves memory by
    this estimate (`only-where-smaller`, the default): the bytes saved
    (each whole accumulator less its shard) exceed twice the largest whole
    accumulator (a micro-batch still computes its gradients whole, and pads
    them, beside the shards). A step whose memory is a few large gradients
    (a two-layer MLP) keeps them whole; a transformer's many layers shard.

    With `microbatch-shards=false` (the pipeline's
    `shard-accumulators=false`) only the second rewrite runs: the loop
    accumulates whole gradients, in the replicated step's order, and
    reduce-scatters them once per step.
  }];
  let options = [
    Option<"microbatchShards", "microbatch-shards", "bool", /*default=*/"true",
           "Make the micro-batch loop's reduce-scattered accumulators the "
           "rank's shards (one reduce-scatter per micro-batch)">,
    Option<"onlyWhereSmaller", "only-where-smaller", "bool",
           /*default=*/"true",
           "Only where the accumulators' bytes saved exceed twice the "
           "largest one's whole (a micro-batch's gradients, computed "
           "beside the shards)">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::ga::train::TrainDialect",
  ];
}

def TrainGatherAtUsePass : Pass<"train-gather-at-use", "::mlir::func::FuncOp"> {
  let summary = "Gather each sharded parameter right before the operations that read it";
  let description = [{
    Sharded data parallelism at stage 3 (`train-shard-state`) leaves every
    parameter as the rank's shard, an argument of the function, gathered
    whole once at the function's entry (`train.all_gather`, then the slice
    and reshape back to the parameter's shape). This pass moves that gather
    to its readers: each top-level operation of the function, or of the body
    of a loop of constant bounds at the function's top level (the
    micro-batch loop of `train-lower-accumulate`), that reads the parameter
    gets its own gather right before it, so the whole parameter exists only
    while that operation (a product, a fused kernel, a loss chunk loop)
    runs: the forward and the backward of each layer gather it again, as
    FSDP does, and a step holds a few layers' whole parameters at a time.

    Every rank runs the same gathers in the same order: an operation under a
    loop whose bounds are not constants (they might differ between ranks)
    or under a conditional is gathered for before the top-level operation
    that holds it. Only a gather of a function argument whose result is
    read through slices and reshapes is moved; anything else is left as it
    is. The result computes the same values; a second run changes nothing.
  }];
  let dependentDialects = [
    "::mlir::tensor::TensorDialect", "::ga::train::TrainDialect",
  ];
}

def TrainSetSchedulePass : Pass<"train-set-schedule"> {
  let summary = "Set every train.step's micro-batch count and rank count";
  let description = [{
    Sets the schedule of every `train.step` (its `microbatches`,
    `data_parallel` and `shard` attributes), as `--ga-pipeline
    microbatches=K shard=S` and the tools' `--microbatches K` ask; 0 (-1
    for the stage) keeps what the step says. A count
    that does not divide the step's batch (per rank) is refused at the
    step. The pipeline runs it first, so that every later pass (the
    planner, the split) sees the count. See [Exact
    accumulation](../exact-accumulation.md).
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"0",
           "Micro-batches per step (0: as written in the step)">,
    Option<"dataParallel", "data-parallel", "int64_t", /*default=*/"0",
           "Data-parallel ranks (0: as written in the step)">,
    Option<"shard", "shard", "int64_t", /*default=*/"-1",
           "Sharding stage, 0 to 3 (-1: as written in the step)">,
  ];
  let dependentDialects = ["::ga::train::TrainDialect"];
}

def TrainSplitBatchPass : Pass<"train-split-batch"> {
  let summary = "Turn the schedule of a train.step into rank slices and "
                "micro-batch loops";
  let description = [{
    Rewrites every `train.step` with `microbatches = k` and
    `data_parallel = r`, `k * r > 1`, into explicit code, after checking with
    the decomposability analysis that the split is exact (the errors of
    `train-check-decomposable`). It first runs the rewrite of
    `train-normalize-loss` on the step (mean losses into sum / global count,
    count results from the labels), so that running it alone is as exact as
    running it after that pass.

    1. With `r > 1`, every rank takes its rows `[rank * B/r, (rank+1) * B/r)`
       of each batch operand (`train.rank`, `tensor.extract_slice`), and the
       enclosing function gets `train.data_parallel = r`.
    2. The *globals*: every batch-sum that does not depend on the parameters
       and that the rest of the step reads (the valid-token count of
       `train-normalize-loss`, a hand-written mask sum) is computed before
       the loop, from the data alone, on the rank's rows; every sum over the
       batch in that computation is completed across the ranks with
       `train.all_reduce sum`, so the globals are those of the whole global
       batch.
    3. A `train.accumulate` with `microbatches = k` runs the body on
       micro-batch slices: every per-example value is re-typed to
       `B/(r*k)` rows, the globals are its `globals` operands.
    4. With `r > 1`, the accumulated loss and gradients are summed across
       the ranks (`train.all_reduce sum`, never `avg`).
    5. Auxiliary outputs that are globals (or do not depend on the batch)
       are taken from the values computed before the loop; those that are
       sums over the batch depending on the parameters (the summed loss, a
       count of correct predictions) become the accumulate's `metrics`,
       summed over the micro-batches and, with `r > 1`, across the ranks.

    `naive=true` builds the usual, inexact schedule instead, so that its
    error can be measured: mean losses stay means, nothing is hoisted (each
    micro-batch normalizes by its own count), the accumulated loss and
    gradients are divided by k and the ranks average them
    (`train.all_reduce avg`); metrics are still summed.

    Errors: a split that is not exact (the analysis's diagnostics), a batch
    dimension or an init that cannot be re-typed, a sum over the batch
    hoisted for the ranks whose init is not zero (each rank would add it),
    and two steps with different `data_parallel` in one function.

    Example: `examples/mlp.mlir` with `microbatches = 4` becomes

    ```mlir
    %count = linalg.generic ... ins(%labels_full) ...   // global count
    %loss, %g:3 = train.accumulate microbatches = 4
        params(%w1, %b1, %w2 : ...) batch(%x, %labels : ...)
        globals(%count : tensor<f32>) -> tensor<f32> grads(...) { ... }
    ```
  }];
  let options = [
    Option<"naive", "naive", "bool", /*default=*/"false",
           "Build the inexact schedule (per-micro-batch means divided by k, "
           "averaging ranks) to measure its error">,
    Option<"statisticsPrepass", "statistics-prepass", "bool",
           /*default=*/"false",
           "Compute the batch statistics that depend on the parameters but "
           "carry no gradient (a mixture's routing fractions) over the whole "
           "batch before the micro-batches, with the part of the forward "
           "they need, instead of refusing the split">,
  ];
  let dependentDialects = [
    "::ga::train::TrainDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def TrainDifferentiatePass : Pass<"train-differentiate"> {
  let summary = "Reverse-mode automatic differentiation of training steps";
  let description = [{
    Computes the gradient of the loss with respect to every parameter by
    reverse-mode automatic differentiation, in plain linalg, tensor, arith and
    math IR (plus `train.cross_entropy_grad`):

    * every `train.step` (with `microbatches = data_parallel = 1`) is replaced
      by its forward computation followed by the backward sweep; its results
      (loss, gradients, auxiliary outputs) are replaced by the computed values;
    * every `train.accumulate` in its contribution form becomes its explicit
      form: the body differentiated with *initial adjoints*, each
      parameter's contribution continuing an accumulator of its own (a
      reduction takes it as its init, a stacked parameter's slices are
      computed into their slices of its accumulator, an embedding's
      scatter-add starts from it, any other contribution is added to it);
      the loss's sums and the metrics continue accumulators too (a
      `train.cross_entropy` sum through its `init`); and a `finalize` region
      applies the loss's final scaling (a division by a global count), adds
      each gradient's accumulators in the order of its contributions, and
      yields the results. This is what keeps a split bitwise equal to the
      full batch.

    Named linalg ops are generalized first; the adjoint of a `linalg.generic`
    is another `linalg.generic` over the same loops, built from the
    derivative of the scalar body with the operand's indexing map as output
    map (elementwise ops, broadcasts, add/min/max reductions and
    contractions alike). Contraction-shaped adjoints and the forward
    contractions are specialized back to named ops (`linalg.matmul`, ...).
    Tensors read with `tensor.extract` inside a body (embedding lookups) get
    a scatter-add; `tensor.extract_slice`/`insert_slice`/`expand_shape`/
    `collapse_shape` move cotangents; `train.checkpoint` regions are
    recomputed in the backward pass from their inputs, which are all that the
    backward pass keeps of them.

    Integer values (labels, token ids, counts) get no gradient. An operation
    between the parameters and the loss without a rule is an error on that
    operation. A parameter that does not influence the loss gets a zero
    gradient.

    With `mark-per-example`, every `linalg` operation with a reduction
    loop in the differentiated body (a step's, or a micro-batch's) whose
    results are per-example (they carry the batch in their rows: the
    forward's activations, their gradients, the attention's scores; not
    the parameters' gradients, which sum over the batch) gets the unit
    attribute `train.per_example`, from the batch decomposability analysis
    of the differentiated body. `ga-mixed-precision`'s `round-results`
    (`precision=bf16`) rounds the results of the marked products: a
    rounding of a per-example value is the same in every split of the
    batch, which a rounding of a batch-sum is not.

    Example: `ga-opt --train-differentiate examples/mlp.mlir`.
  }];
  let options = [
    Option<"markPerExample", "mark-per-example", "bool", /*default=*/"false",
           "Mark the reductions whose results are per-example "
           "(train.per_example)">,
  ];
  let dependentDialects = [
    "::ga::train::TrainDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def TrainInlineCheckpointsPass : Pass<"train-inline-checkpoints"> {
  let summary = "Remove train.checkpoint regions by inlining their bodies";
  let description = [{
    Replaces every `train.checkpoint` by the operations of its body: the
    region's inputs stand for its block arguments and the yielded values for
    its results. The values computed inside are then saved for the backward
    pass like any other value (no recomputation).

    Inlining never changes values; use it to measure what checkpointing
    saves, or to lower a step whose memory budget is not a concern. Nested
    checkpoints are inlined too.

    Example:

    ```mlir
    %h = train.checkpoint (%x : tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      %y = math.tanh %a : tensor<4xf32>
      train.yield %y : tensor<4xf32>
    }
    ```

    becomes

    ```mlir
    %h = math.tanh %x : tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::ga::train::TrainDialect"];
}

def GaChunkLossHeadPass : Pass<"ga-chunk-loss-head"> {
  let summary = "Compute the LM head, its loss and the products that read "
                "the logits' gradient over chunks of rows";
  let description = [{
    After `train-differentiate`, on tensors: a summed `train.cross_entropy`
    and its `train.cross_entropy_grad` on [N, V] logits that a
    row-parallel linalg operation computes from zero (the LM head's
    matmul), where every operation that reads the logits' gradient walks
    its rows either in parallel (the hidden states' gradient, `dlogits
    W^T`) or as a reduction (the head's weight gradient, `X^T dlogits`),
    become one `scf.for` over chunks of at most `chunk-rows` rows (the
    largest divisor of N not above it that is a multiple of 8, for the
    CPU's vector code, else the largest divisor): per chunk, the head on the chunk's rows of
    its input, the loss (added to a running sum), its gradient, and the
    products, the parallel ones inserted into their result and the
    reductions continuing their init. Only [chunk-rows, V] logits exist at
    a time, as in fused linear cross-entropy kernels; together with
    `convert-train-to-linalg`, which computes the gradient in place of the
    chunk's logits, the step never holds an [N, V] tensor.

    Values: each logit row, loss row and gradient row is the same
    computation, and a reduction over the rows continues its init in row
    order, so the gradients are those of the unchunked step; the loss is
    the sum of the chunks' sums (another grouping of the same terms: within
    float32 rounding of the unchunked loss). Operations that read the loss
    before the values its gradient needs (the loss's scaling) move after
    the loop. A loss that does not have this form is left as it is, with a
    warning that says why. Pipeline option `loss-chunk-rows` (0: off).

    Example, with `chunk-rows=2` on 8 rows: the head
    `linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>)`, the
    `train.cross_entropy sum` and `train.cross_entropy_grad sum` of its
    result, `%dx = linalg.matmul ins(%g, %w)` (rows in parallel) and
    `%dw = linalg.matmul ins(%x, %g)` (a sum over the rows) become

    ```mlir
    %r:3 = scf.for %i = %c0 to %c4 step %c1
        iter_args(%l = %zero, %dx = %zx, %dw = %zw) -> (...) {
      %xc = tensor.extract_slice %x[%i * 2, 0] [2, 4] [1, 1]
      %logits = linalg.matmul ins(%xc, %w : tensor<2x4xf32>, ...)
      %yc = tensor.extract_slice %y[%i * 2] [2] [1]
      %lc = train.cross_entropy sum %logits, %yc ...
      %sum = linalg.generic ... ins(%lc) outs(%l)      // %l + %lc
      %gc = train.cross_entropy_grad sum %logits, %yc, %s ...
      %part = linalg.matmul ins(%gc, %w) outs(<rows of %dx>)
      %dx2 = tensor.insert_slice %part into %dx[%i * 2, 0] [2, 4] [1, 1]
      %dw2 = linalg.matmul ins(<rows of %x>, %gc) outs(%dw)
      scf.yield %sum, %dx2, %dw2
    }
    ```

    (`test/Transforms/chunk-loss-head.mlir` has it in full.)
  }];
  let options = [
    Option<"chunkRows", "chunk-rows", "int64_t", /*default=*/"1024",
           "The most rows of logits computed at a time">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect"
  ];
}

def GaMixedPrecisionPass : Pass<"ga-mixed-precision"> {
  let summary = "Matrix products of bfloat16 inputs with float32 sums "
                "(bf16-mixed)";
  let description = [{
    Every matrix product on tensors (a `linalg` operation with two float32
    inputs and a float32 output, each input with a dimension of its own
    beside the summed ones, whose body reads the input elements only as
    factors of multiplications: `linalg.matmul`, `linalg.batch_matmul`,
    the transposed and scaled products that differentiation writes) reads
    bfloat16 copies of its inputs (`arith.truncf`, round to nearest even)
    and widens each element back to float32 (`arith.extf`, exact) before
    multiplying: a named product keeps its kind and maps (its body widens
    mixed operands itself), so that the passes after this one see the
    named products they see in float32; any other product becomes a
    `linalg.generic` of the same loops with the widening in its body. The
    products
    of two bfloat16 values are exact in float32 and the sums are float32,
    as on the tensor cores (cuBLAS with bfloat16 inputs and float32
    compute). Everything else keeps float32: parameters, gradients and
    their accumulators, optimizer state, softmax, layer norm, the loss and
    every reduction that is not a product.

    Each tensor gets one copy, made right after its definition and shared
    by every product that reads it: an activation that a forward product
    reads and a backward product (the weight's gradient) reads again is
    held from the forward to the backward pass as its bfloat16 copy, in
    half the bytes, and a weight is rounded once per step. This is
    `precision=bf16-mixed` of `--ga-pipeline`, run after
    `train-lower-accumulate`, before fusion; the memory budget's planner
    compiles its candidates with it and so counts the copies.

    ```mlir
    %c = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>)
        outs(%zero : tensor<8x6xf32>) -> tensor<8x6xf32>
    ```

    becomes

    ```mlir
    %x16 = linalg.generic ... ins(%x : tensor<8x4xf32>)
        outs(%e : tensor<8x4xbf16>) { arith.truncf ... }
    %w16 = linalg.generic ... ins(%w : tensor<4x6xf32>)
        outs(%e2 : tensor<4x6xbf16>) { arith.truncf ... }
    %c = linalg.matmul ins(%x16, %w16 : tensor<8x4xbf16>, tensor<4x6xbf16>)
        outs(%zero : tensor<8x6xf32>) -> tensor<8x6xf32>
    ```

    and a product written as a `linalg.generic` (`%a`, `%b` its inputs'
    elements) gets the body
    `%p = arith.mulf (arith.extf %a : bf16 to f32), (arith.extf %b)`.

    A product on buffers is refused with an error at the product (the pass
    runs on tensors).

    With `round-results` (`precision=bf16`), each product that
    `train-differentiate` marked `train.per_example` (an activation, an
    activation's gradient, the attention's scores: a value whose rows are
    examples, not a parameter's gradient, which sums over the batch) also
    rounds its float32 sum to bfloat16 once, as a bfloat16 GEMM with float32
    compute writes its output: the tensor between kernels is the bfloat16
    one, products read it as it is, and every other reader widens it. Where
    the product's only reader adds a parameter to it elementwise (a bias),
    the sum is rounded instead, the bias read as its bfloat16 rounding, as
    a bfloat16 GEMM's bias epilogue computes (its bias has the output's
    type) and as autocast's `addmm` does. Rounding a
    per-example value gives the same bits in every split of the batch, so
    splits stay exact; parameters' gradients, their accumulators and every
    reduction that is not a product stay float32.
  }];
  let options = [
    Option<"roundResults", "round-results", "bool", /*default=*/"false",
           "Round the results of the products marked train.per_example "
           "to bfloat16, readers widening them (precision=bf16)">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect"
  ];
}

def TrainPlanRematPass : Pass<"train-plan-remat", "::mlir::ModuleOp"> {
  let summary = "Checkpoint the units of a step that fit it into a memory "
                "budget";
  let description = [{
    Rematerialization under a budget in bytes: the step's own buffers at
    their peak plus its arguments (`ga-run --report-memory`'s
    `peak_bytes`), or with `device-allocator` the CUDA runtime's device
    memory. Runs on `train.step` operations before the pipeline (as
    `--ga-pipeline="memory-budget=BYTES"` runs it).

    The forward part of each step body is cut into units where one
    activation alone is alive (between a transformer's blocks and between
    their halves). A dynamic program over a model of that chain (what each
    unit's adjoints read, its boundary, its largest value; with
    `measure-units`, measured on the step compiled without new
    checkpoints) proposes plans of least recomputed work under 64 limits;
    each candidate is compiled on a copy by the pipeline that built the
    pass (a typed callback, `ga/Transforms/Remat.h`; from the command
    line, `--ga-pipeline` with `buffers-only=true` and `pipeline-options`)
    and measured by the memory model, which predicts the runtime's count
    to the byte. A bisection and a window of 8 over the candidates take the
    cheapest that fits; the recomputed work never grows with the budget.
    Where none fits, fixed segments are measured, or the budget is an error
    naming the smallest peak reached. With `choose-microbatches=true` the
    micro-batch count is chosen too, for the least estimated time; with
    host offload, a plan's cost includes the copies that do not hide.

    Checkpointing never changes values: the planned step's results are
    bitwise those of the unplanned one. `train.remat = "save"` or
    `"recompute"` on an operation forces its unit; `plan=RANGES` applies a
    given plan instead of searching; `report-plans` remarks every unit and
    every plan measured; `export-graph` writes the chain for `ga-remat`.
    The choice is recorded on the step as `train.memory_plan`
    (`train/MemoryPlan.h`).

    ```sh
    ga-opt step.mlir --train-plan-remat="memory-budget=150000 choose-microbatches=true" \
      --train-print-summary -o planned.mlir
    ```

    The algorithm in detail, the chain model, host offload's weighing and
    the measurements: [Rematerialization](../remat.md) (docs/remat.md).
  }];
  let options = [
    Option<"memoryBudget", "memory-budget", "int64_t", /*default=*/"0",
           "The budget in bytes (0: no planning)">,
    Option<"pipelineOptions", "pipeline-options", "std::string",
           /*default=*/"",
           "From the command line: options of --ga-pipeline that compile "
           "the candidates (as the step will be compiled; --ga-pipeline "
           "hands the planner its own pipeline instead)">,
    Option<"chooseMicrobatches", "choose-microbatches", "bool",
           /*default=*/"false",
           "Choose each step's micro-batch count (a divisor of the batch per "
           "rank) with its checkpoints, for the least estimated time under "
           "the budget (false: keep the step's)">,
    Option<"microbatchCost", "microbatch-cost", "int64_t", /*default=*/"-1",
           "With choose-microbatches, the estimated cost of one micro-batch in "
           "points of work (-1: twice the parameters' elements, their "
           "gradients' accumulation)">,
    Option<"deviceAllocator", "device-allocator", "bool",
           /*default=*/"false",
           "Measure each candidate as the CUDA runtime's device memory: the "
           "inputs on the device and the step's buffers in 512-byte blocks "
           "that its caching allocator keeps by size (the most of each size "
           "alive at once), instead of the buffers' bytes at their peak and "
           "the arguments (--ga-pipeline sets it for target=cuda)">,
    Option<"deviceFixedBytes", "device-fixed-bytes", "int64_t",
           /*default=*/"0",
           "With device-allocator: device memory held beside the step "
           "whatever the plan (cuBLAS's workspace), added to every "
           "candidate's peak (--ga-pipeline sets it for target=cuda with "
           "gpu-blas)">,
    Option<"fixedPlan", "plan", "std::string", /*default=*/"",
           "Instead of a search, checkpoint these units and measure the "
           "step: increasing, disjoint ranges 'a-b' or 'a' of unit indices "
           "(report-plans numbers them), by commas; an error where the "
           "step does not fit the budget (a reference plan's check)">,
    Option<"exportGraph", "export-graph", "std::string", /*default=*/"",
           "Write the chosen plan's chain of units to this file as a "
           "ga-remat graph (JSON), to compare the plan with ga-remat's MILP">,
    Option<"measureUnits", "measure-units", "bool", /*default=*/"true",
           "Measure the chain model's units on the step compiled without new "
           "checkpoints at each micro-batch count (what each unit keeps, "
           "holds while it runs and in its backward pass, and the loss), "
           "instead of modelling them from the step's tensors alone">,
    Option<"reportPlans", "report-plans", "bool", /*default=*/"false",
           "A remark for every unit (its bytes, the values it keeps) and "
           "every plan measured: its micro-batch count, checkpoints, "
           "recomputed share, the chain model's peak and the exact peak, "
           "where the step reaches it, and whether it fits">,
  ];
  let dependentDialects = ["::ga::train::TrainDialect"];
}

def GaExportStepPass : Pass<"ga-export-step", "::mlir::ModuleOp"> {
  let summary = "Export a lowered step through the C ABI of a step library";
  let description = [{
    Runs on a module that the CPU pipeline lowered to the LLVM dialect.
    Adds the two exported functions of a step library (the ABI of
    `ga/Runtime/ga_step.h`, which `ga-compile` builds):

    - `ga_step_signature()`, which returns the step's signature as text
      (element types and shapes of the arguments and results, the loss and
      gradient results, the data-parallel rank count), built from the
      entry's `train.signature`, `train.loss_result`,
      `train.gradient_results` and `train.data_parallel` attributes;
    - `ga_step_run(inputs, outputs, status)`, which passes plain pointers as
      memref descriptors of the recorded shapes, calls the entry, and hands
      the returned descriptors to the runtime's `ga_step_leave` (copy into
      the caller's buffers, free, error report) after `ga_step_enter`
      (world size and pointer checks).

    The entry gets internal linkage. Refuses, with an error on the entry, a
    function without `train.signature`, a signature with a value that is not
    a statically shaped f32/f64/i32/i64 tensor, an entry whose lowered
    arguments are not the descriptors of that signature, and a module that
    already defines the exported names.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"",
           "The function to export (default: the only llvm.func carrying "
           "train.signature)">,
    Option<"runtime", "runtime", "::ga::Target",
           /*default=*/"::ga::Target::CPU",
           "The runtime whose entry and exit ga_step_run calls: cpu "
           "(ga_step_enter/leave) or cuda (ga_cuda_step_enter/leave, which "
           "copy the inputs to device buffers and the results back)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

//===----------------------------------------------------------------------===//
// Checks and reports, outside the pipeline
//===----------------------------------------------------------------------===//

def TrainCheckDecomposablePass : Pass<"train-check-decomposable"> {
  let summary = "Refuse a batch split that would change the loss or the "
                "gradients";
  let description = [{
    For every `train.step` with `microbatches * data_parallel > 1`, classifies
    every value of the body along the batch dimension (invariant,
    per-example, batch-sum, mixed; and whether it depends on the parameters;
    see `--test-train-decomposability`) and reports an error on the operation
    that makes the split inexact, saying why:

    * batch statistics that depend on the parameters feeding per-example
      values (batch normalization);
    * a reduction over the batch that is not a sum (a softmax or a maximum
      across the batch);
    * a non-linear use of a batch-sum that depends on the parameters (a
      product of two such sums, a division by one, a `log` of one);
    * a term that does not depend on the batch added to the loss (it would be
      added once per micro-batch);
    * slices of part of the batch, reads of the position in the batch, and
      operations the analysis does not understand.

    * a `train.cross_entropy {reduction = mean}` over the batch: the mean of
      the micro-batch means is not the mean. `train-normalize-loss` rewrites
      it into a sum divided by the global count, and `train-split-batch`
      runs that rewrite itself, so the split accepts such a step; this check
      reports the step as it stands;
    * a `train.cross_entropy` that pairs the batch's labels with logits that
      do not carry the batch (or the reverse);
    * an auxiliary output that keeps the batch dimension or is mixed.

    Batch-sums that do not depend on the parameters (token counts, mask
    sums) may be used in any way: `train-split-batch` computes them once for
    the whole global batch. Auxiliary outputs may be such globals, values
    that do not depend on the batch, or sums over the batch that depend on
    the parameters (the summed loss, a count of correct predictions): the
    split accumulates those. A step that passes is exact to split.

    Example (a loss divided by a sum of the logits):

    ```
    error: cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly:
    this operation divides by a batch-sum that depends on the parameters
    ('arith.divf'): a split would divide by each micro-batch's own sum
    ```
  }];
  let dependentDialects = ["::ga::train::TrainDialect"];
}

def TrainPrintSummaryPass : Pass<"train-print-summary"> {
  let summary = "Print a readable summary of every train.step";
  let description = [{
    For every `train.step`, prints to standard output where it is, its
    schedule (micro-batches, data-parallel ranks, micro-batch size), its
    parameters (types and the number of trainable values), its batch
    operands, the losses it computes, its auxiliary outputs, and how many
    operations of each kind its body holds. The IR is left unchanged.

    Example:

    ```
    ga-opt --train-print-summary -o /dev/null examples/mlp.mlir
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Test passes: the analyses' answers as remarks, for lit tests
//===----------------------------------------------------------------------===//

def TestTrainDecomposabilityPass : Pass<"test-train-decomposability"> {
  let summary = "Report the batch class of every value of each train.step "
                "(testing)";
  let description = [{
    Emits a remark on every operation of each `train.step` body with the
    class of each result: `invariant`, `per-example (batch dimension d)`,
    `batch-sum` (depends on the parameters), `batch-sum, global` (computed
    from the data alone: a split computes it once for the global batch) or
    `mixed`, with `, parameter-dependent` where it applies; and a remark
    `mixed: <reason>` on each operation where a value first becomes mixed.
    For lit tests of the analysis behind `train-check-decomposable`.
  }];
  let options = [
    Option<"statisticsPrepass", "statistics-prepass", "bool",
           /*default=*/"false",
           "Classify as train-split-batch statistics-prepass=true does (a "
           "batch statistic without a gradient is a global)">,
  ];
}

def TestTrainAdjointNeedsPass : Pass<"test-train-adjoint-needs"> {
  let summary = "Report which forward values each adjoint needs (testing)";
  let description = [{
    For every operation in the body of a `train.step`, emits a remark saying
    which of its operands and results its adjoint reads (the memory model of
    rematerialization planning), or that it has no adjoint rule. Named
    linalg ops are answered for their generalized form. Used by lit tests.

    Example: for `linalg.matmul ins(%x, %w ...) outs(%acc ...)` inside a
    step, `ga-opt --test-train-adjoint-needs` remarks
    `adjoint needs operands [0, 1], results []`.
  }];
}

def TestTrainMemoryModelPass
    : Pass<"test-train-memory-model", "::mlir::ModuleOp"> {
  let summary = "Report the memory model's peak of each function (testing)";
  let description = [{
    Simulates one call of each public function with a body (the memory
    model, `ga/Analysis/BufferMemory.h`) and remarks on it with the peak
    bytes of its own buffers, the number of allocations and the bytes it
    returns, with a note at each allocation whose buffers are alive at the
    peak. A module that is not bufferized yet (tensors, train ops) is first
    compiled, on a copy, by `--ga-pipeline` with `buffers-only=true` and the
    given `pipeline-options`; the module itself is left unchanged. The
    figures are those the runtime counts (`ga-run --report-memory`).

    Example: `ga-opt --test-train-memory-model examples/mlp.mlir
    -o /dev/null` remarks `memory model: peak 100224 bytes ...`.
  }];
  let options = [
    Option<"pipelineOptions", "pipeline-options", "std::string",
           /*default=*/"",
           "Options of --ga-pipeline for a module that is not bufferized yet "
           "(e.g. 'naive=true vectorize=false')">,
  ];
}

#endif // GA_TRANSFORMS_PASSES_TD
