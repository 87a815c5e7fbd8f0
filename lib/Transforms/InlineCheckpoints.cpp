//===- InlineCheckpoints.cpp - Remove train.checkpoint regions ------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAININLINECHECKPOINTSPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace {
struct TrainInlineCheckpointsPass
    : ga::impl::TrainInlineCheckpointsPassBase<TrainInlineCheckpointsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Post-order: inner checkpoints are inlined into their parent's body
    // before the parent itself is inlined.
    SmallVector<CheckpointOp> checkpoints;
    getOperation()->walk([&](CheckpointOp op) { checkpoints.push_back(op); });

    IRRewriter rewriter(&getContext());
    for (CheckpointOp op : checkpoints) {
      // Inline first: the yield's operands that were block arguments then
      // refer to the checkpoint's inputs.
      YieldOp yield = op.getYield();
      rewriter.inlineBlockBefore(&op.getBody().front(), op, op.getInputs());
      rewriter.replaceOp(op, yield.getValues());
      rewriter.eraseOp(yield);
    }
  }
};
} // namespace
