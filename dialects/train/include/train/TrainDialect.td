//===- TrainDialect.td - The train dialect -----------------*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRAIN_TRAINDIALECT_TD
#define GA_TRAIN_TRAINDIALECT_TD

include "mlir/IR/OpBase.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::ga::train";
  let summary = "Training steps whose batch splits are exact";
  let description = [{
    The `train` dialect describes one training step of a model on the *full*
    batch, plus the few operations that training needs beyond upstream
    `linalg`, `tensor`, `arith` and `math`: a token-level cross-entropy, the
    rematerialization region, the explicit micro-batch loop, the cross-rank
    reduction, and the optimizer updates.

    The central invariant: a `train.step` means one step on the full batch.
    Its `microbatches` and `data_parallel` attributes say how to *execute* it
    (gradient accumulation over k slices, data parallelism over r ranks) and
    never change the loss, the gradients or the gradient norm beyond
    floating-point reassociation. ga-opt's passes prove a split exact, rewrite
    the step so that it is (mean-reduced losses become a sum divided by the
    count of the whole global batch), or reject it with a diagnostic on the
    offending operation.

    Dimension 0 of every batch operand is the batch dimension.

    Discardable attributes (set by the passes, checked by the dialect's
    verifier wherever they appear):

    * `train.signature` (type attribute, a function type), on a function:
      the tensor signature of the function before lowering, which `ga-run`
      reads to call the lowered function (`train-record-signatures`);
    * `train.loss_result` (i64), on a function: which result is the loss;
    * `train.gradient_results` (array of i64), on a function: which results
      are gradients;
    * `train.data_parallel` (i64, at least 1), on a function: the number of
      data-parallel ranks it runs on (`train-split-batch`);
    * `train.shard` (i64, 0 to 3), on a function: the sharding stage of its
      data-parallel step (the step's `shard`, recorded by `train-split-batch`
      for `train-shard-state`);
    * `train.parallel` (unit), on an `scf.for`: a tile loop of
      `ga-tile-and-vectorize` whose iterations write disjoint parts of the
      results, which `ga-parallelize-loops` may run on threads;
    * `train.per_example` (unit), on a `linalg` operation: its results
      are per-example (they carry the batch in their rows; not a sum over
      the batch), marked by `train-differentiate`'s `mark-per-example` for
      `ga-mixed-precision`'s `round-results` (`precision=bf16`);
    * `train.kernel` (unit), on a function: a kernel of
      `ga-outline-kernels`, which `ga-bufferize` lets write into its
      caller's buffers;
    * `train.remat` (string, `"save"` or `"recompute"`), on an operation of
      a step body: `train-plan-remat` keeps the unit holding it saved, or
      checkpoints it whatever the budget;
    * `train.memory_plan` (dictionary), on a `train.step`: what
      `train-plan-remat` chose and measured: `budget`, `peak`, `unplanned`
      (bytes, i64), `checkpoints` (i64), `recomputed` (the share of the
      forward work, a string), `choice` (`"auto"` when it chose the
      micro-batch count, else `"fixed"`); `train-print-summary` shows it;
    * `train.init` (`"zeros"`, `"ones"`, or a non-negative float: the
      standard deviation of a normal draw), on an argument of a function:
      how `ga-train` initializes the parameter that the argument holds;
    * `train.name` (a non-empty string), on an argument of a function: the
      name of the parameter that the argument holds (a PyTorch module's
      `state_dict` key, written by `ga-import`); `ga-train` writes it into
      its checkpoints' manifests;
    * `train.argument_names` (an array of strings, one per argument of
      `train.signature`, empty for an unnamed argument; no whitespace), on
      a function: the `train.name` of each argument, recorded by
      `train-record-signatures` so that it survives the lowering (the LLVM
      function's arguments are the memrefs' descriptors); `ga-compile`
      writes the names into the step library's signature (`name` records,
      `ga_step.h`), which the Python binding reads.
  }];

  let discardableAttrs = (ins
    "::mlir::TypeAttr":$signature,
    "::mlir::IntegerAttr":$loss_result,
    "::mlir::DenseI64ArrayAttr":$gradient_results,
    "::mlir::IntegerAttr":$data_parallel,
    "::mlir::IntegerAttr":$shard,
    "::mlir::UnitAttr":$kernel,
    "::mlir::UnitAttr":$parallel,
    "::mlir::UnitAttr":$per_example,
    "::mlir::StringAttr":$remat,
    "::mlir::DictionaryAttr":$memory_plan,
    "::mlir::Attribute":$init,
    "::mlir::StringAttr":$name,
    "::mlir::ArrayAttr":$argument_names
  );
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
}

#endif // GA_TRAIN_TRAINDIALECT_TD
