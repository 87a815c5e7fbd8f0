//===- ConvertTrainToLinalgPass.cpp - The convert-train-to-linalg pass -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Conversion/Passes.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_CONVERTTRAINTOLINALGPASS
#include "ga/Conversion/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {
struct ConvertTrainToLinalgPass
    : ga::impl::ConvertTrainToLinalgPassBase<ConvertTrainToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    ga::populateTrainToLinalgPatterns(patterns);
    // One rewrite per op, no fixed point needed: a plain walk.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // Report what could not be lowered, on the op.
    WalkResult result = getOperation()->walk([](ga::train::CrossEntropyOp op) {
      op.emitOpError() << "could not be lowered to linalg (only static "
                          "shapes are supported)";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
