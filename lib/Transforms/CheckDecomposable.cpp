//===- CheckDecomposable.cpp - The decomposability passes -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-check-decomposable and its test pass, on the analysis of
// ga/Analysis/Decomposability.h.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/Decomposability.h"
#include "ga/Transforms/Passes.h"

#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINCHECKDECOMPOSABLEPASS
#define GEN_PASS_DEF_TESTTRAINDECOMPOSABILITYPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga;
using namespace ga::train;

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

namespace {
struct TrainCheckDecomposablePass
    : ga::impl::TrainCheckDecomposablePassBase<TrainCheckDecomposablePass> {
  using Base::Base;
  void runOnOperation() override {
    bool failedAny = false;
    getOperation()->walk([&](StepOp step) {
      if (step.getDataParallel() * step.getMicrobatches() > 1)
        failedAny |= failed(Decomposability(step).checkSplitIsExact());
    });
    if (failedAny)
      signalPassFailure();
  }
};

struct TestTrainDecomposabilityPass
    : ga::impl::TestTrainDecomposabilityPassBase<TestTrainDecomposabilityPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation()->walk([&](StepOp step) {
      Decomposability analysis(step, /*meansAreSums=*/false, statisticsPrepass);
      step.getBody().walk([&](Operation *op) {
        if (op->getNumResults() == 0 || isa<StepOp>(op) ||
            op->getParentOfType<linalg::LinalgOp>())
          return;
        std::string text;
        for (auto [i, r] : llvm::enumerate(op->getResults()))
          text += (i ? "; " : "") + analysis.get(r).str();
        op->emitRemark() << text;
      });
      for (const MixedReason &reason : analysis.getMixedReasons())
        if (!reason.why.empty())
          reason.op->emitRemark() << "mixed: " << reason.why;
    });
  }
};
} // namespace
