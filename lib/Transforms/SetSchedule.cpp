//===- SetSchedule.cpp - A step's micro-batch and rank counts -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-set-schedule sets what `microbatches=K` (the pipeline's option, the
// tools' --microbatches) asks for on every train.step: one meaning of the
// micro-batch count, an integer K, everywhere. The step's verifier decides
// whether the count divides its batch; a count that does not is refused at
// the step, naming the batch and the counts.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINSETSCHEDULEPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace {
struct TrainSetSchedulePass
    : ga::impl::TrainSetSchedulePassBase<TrainSetSchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    if (shard < -1 || shard > 3) {
      getOperation()->emitError("train-set-schedule: shard must be a stage "
                                "from 0 to 3 (-1: as written in the step), "
                                "got ")
          << static_cast<int64_t>(shard);
      return signalPassFailure();
    }
    if (microbatches < 0 || dataParallel < 0) {
      getOperation()->emitError("train-set-schedule: microbatches and "
                                "data-parallel must be at least 0 (0: as "
                                "written in the step), got microbatches=")
          << static_cast<int64_t>(microbatches)
          << " data-parallel=" << static_cast<int64_t>(dataParallel);
      return signalPassFailure();
    }
    WalkResult walked = getOperation()->walk([&](StepOp step) {
      Builder b(step.getContext());
      int64_t k = microbatches ? static_cast<int64_t>(microbatches)
                               : static_cast<int64_t>(step.getMicrobatches());
      int64_t r = dataParallel ? static_cast<int64_t>(dataParallel)
                               : static_cast<int64_t>(step.getDataParallel());
      std::optional<int64_t> batch = step.getBatchSize();
      if (batch && *batch % (k * r) != 0) {
        step.emitError("train-set-schedule: a batch of ")
            << *batch << " rows does not split into " << r << " rank(s) x " << k
            << " micro-batch(es) (" << k * r
            << " must divide it); choose a count that divides " << *batch / r
            << ", the rows per rank";
        return WalkResult::interrupt();
      }
      step.setMicrobatchesAttr(b.getI64IntegerAttr(k));
      step.setDataParallelAttr(b.getI64IntegerAttr(r));
      if (shard >= 0)
        step.setShardAttr(b.getI64IntegerAttr(shard));
      if (failed(verify(step)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
