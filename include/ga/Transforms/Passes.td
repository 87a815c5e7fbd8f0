//===- Passes.td - ga-opt transformation passes ------------*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRANSFORMS_PASSES_TD
#define GA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def TrainDifferentiatePass : Pass<"train-differentiate"> {
  let summary = "Reverse-mode automatic differentiation of training steps";
  let description = [{
    Computes the gradient of the loss with respect to every parameter by
    reverse-mode automatic differentiation, in plain linalg, tensor, arith and
    math IR (plus `train.cross_entropy_grad`):

    * every `train.step` (with `microbatches = data_parallel = 1`) is replaced
      by its forward computation followed by the backward sweep; its results
      (loss, gradients, auxiliary outputs) are replaced by the computed values;
    * every `train.accumulate` whose body yields only the loss contribution
      gets a body that also yields each parameter's gradient contribution.

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

    Example: `ga-opt --train-differentiate examples/mlp.mlir`.
  }];
  let dependentDialects = [
    "::ga::train::TrainDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
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

def TrainRecordSignaturesPass : Pass<"train-record-signatures", "::mlir::ModuleOp"> {
  let summary = "Record each function's tensor signature for ga-run";
  let description = [{
    Attaches to every `func.func` with a body its tensor-level signature
    (`ga.signature`, a function type) and, when its results come from a
    `train.step`, which results are the loss (`ga.loss_result`) and the
    gradients (`ga.gradient_results`). The attributes survive lowering to the
    LLVM dialect, so `ga-run` can run already-lowered IR: it reads and writes
    `.npy` files with these shapes and reports the loss and the gradient
    norm. The first stage of `--ga-pipeline`.

    Example: for `examples/mlp.mlir`, `ga-opt --train-record-signatures`
    gives `@mlp_step` the attributes

    ```mlir
    ga.gradient_results = array<i64: 1, 2, 3>, ga.loss_result = 0 : i64,
    ga.signature = (tensor<32x64xf32>, ...) -> (tensor<f32>, ...)
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
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

def GaTileAndVectorizePass : Pass<"ga-tile-and-vectorize"> {
  let summary = "Tile linalg operations on tensors and vectorize the tiles";
  let description = [{
    The vectorization stage of the CPU pipeline. It runs on linalg operations
    with tensor semantics, before bufferization, and only where vector code
    pays: the operation has static shapes, indexing maps that are projected
    permutations, no gather (`tensor.extract`) or `linalg.index` in its body,
    and the innermost dimension of its result is a parallel loop whose size is
    a multiple of `vector-width`. Everything else is left to the scalar loops
    of `convert-linalg-to-loops`.

    Such an operation is tiled with `scf.for` loops (`vector-width` along the
    result's innermost dimension; `register-rows` along the one before it
    when the operation reduces, so that a contraction keeps a block of
    accumulators in registers; `vector-width` along every reduction dimension
    whose size it divides, otherwise the whole dimension up to 64; 1
    elsewhere) and each tile becomes vector code (`vector.transfer_read`,
    `vector.contract`, `vector.multi_reduction`, elementwise vector
    arithmetic). Reductions keep their order within a tile row, so results
    can differ from the scalar loops only by floating-point reassociation
    across the tiled reduction.

    Example: `ga-opt --ga-tile-and-vectorize` turns a `linalg.matmul` of
    `tensor<128x32xf32>` by `tensor<32x64xf32>` into a loop nest over 4x8
    blocks of the result whose body is a `vector.contract` of
    `vector<4x8xf32>` and `vector<8x8xf32>`.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"8",
           "Vector length along the innermost result dimension">,
    Option<"registerRows", "register-rows", "int64_t", /*default=*/"4",
           "Rows of a reduction's result computed together in one tile">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect",
  ];
}

#endif // GA_TRANSFORMS_PASSES_TD
