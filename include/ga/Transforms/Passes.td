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

#endif // GA_TRANSFORMS_PASSES_TD
