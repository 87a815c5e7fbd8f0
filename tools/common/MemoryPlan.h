//===- MemoryPlan.h - The planner's choice, for the tools ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// train-plan-remat records its choice on the step (train.memory_plan: the
// budget, the planned peak, the peak without new checkpoints, the
// checkpoints and the units they cover, the share recomputed, whether the
// micro-batch count was chosen) and sets the step's micro-batch count; the
// lowering that follows removes the step. MemoryPlanRecorder, a pass
// instrumentation, reads both right after the pass, so that ga-compile prints
// them as one line and ga-train reports the chosen count, without reading the
// remark's text. With host-offload, ga-gpu-offload-buffers records on the
// bufferized step what it moved to host memory (ga.host_offload), read the
// same way after that pass.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_COMMON_MEMORYPLAN_H
#define GA_TOOLS_COMMON_MEMORYPLAN_H

#include "train/MemoryPlan.h"
#include "train/TrainOps.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace ga::tool {

/// One step's plan: train.memory_plan's record (train/MemoryPlan.h), the
/// step's micro-batch count after the planner, and what host offload moved.
struct MemoryPlan : ga::train::MemoryPlanRecord {
  int64_t microbatches = 1;
  /// host-offload: the buffers moved to host memory and their bytes (each
  /// way), when the pass ran.
  std::optional<std::pair<int64_t, int64_t>> offloaded;

  /// "memory_plan: microbatches 8 (auto), planned peak P bytes within a
  /// budget of B bytes, ..." (one line, for people and scripts).
  std::string line() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "memory_plan: microbatches " << microbatches << " (" << choice
       << "), planned peak " << peak << " bytes within a budget of " << budget
       << " bytes, " << checkpoints << " checkpoint(s) over " << units
       << " unit(s), recomputed " << recomputed << " of the forward work, ";
    if (!copies.empty())
      os << "copies that do not hide estimated at " << copies
         << " of the forward work's time, ";
    os << unplanned << " bytes without new checkpoints";
    if (offloaded)
      os << ", " << offloaded->first << " buffer(s) offloaded to host memory ("
         << offloaded->second << " bytes each way per step)";
    return text;
  }
};

/// Records the plan of the first train.step that train-plan-remat planned.
class MemoryPlanRecorder : public mlir::PassInstrumentation {
public:
  /// A recorder added to `pm` (which owns it).
  static MemoryPlanRecorder *attach(mlir::PassManager &pm) {
    auto recorder = std::make_unique<MemoryPlanRecorder>();
    MemoryPlanRecorder *attached = recorder.get();
    pm.addInstrumentation(std::move(recorder));
    return attached;
  }

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (pass->getArgument() == "ga-gpu-offload-buffers") {
      std::pair<int64_t, int64_t> moved{0, 0};
      op->walk([&](mlir::Operation *function) {
        if (auto dict = function->getAttrOfType<mlir::DictionaryAttr>(
                "ga.host_offload")) {
          if (auto n = dict.getAs<mlir::IntegerAttr>("buffers"))
            moved.first += n.getInt();
          if (auto b = dict.getAs<mlir::IntegerAttr>("bytes"))
            moved.second += b.getInt();
        }
      });
      std::lock_guard<std::mutex> lock(mutex);
      if (!offloaded)
        offloaded = moved;
      return;
    }
    if (pass->getArgument() != "train-plan-remat")
      return;
    op->walk([&](ga::train::StepOp step) {
      auto dict = step->getAttrOfType<mlir::DictionaryAttr>(
          ga::train::TrainDialect::MemoryPlanAttrHelper::getNameStr());
      if (!dict)
        return mlir::WalkResult::advance();
      MemoryPlan got;
      static_cast<ga::train::MemoryPlanRecord &>(got) =
          ga::train::MemoryPlanRecord::fromAttr(dict);
      got.microbatches = step.getMicrobatches();
      std::lock_guard<std::mutex> lock(mutex);
      if (!recorded)
        recorded = got;
      return mlir::WalkResult::interrupt();
    });
  }

  /// The plan recorded, if train-plan-remat planned a step.
  std::optional<MemoryPlan> plan() const {
    std::lock_guard<std::mutex> lock(mutex);
    std::optional<MemoryPlan> got = recorded;
    if (got)
      got->offloaded = offloaded;
    return got;
  }

private:
  mutable std::mutex mutex;
  std::optional<MemoryPlan> recorded;
  std::optional<std::pair<int64_t, int64_t>> offloaded;
};

} // namespace ga::tool

#endif // GA_TOOLS_COMMON_MEMORYPLAN_H
