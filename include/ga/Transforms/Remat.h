//===- Remat.h - The remat planner's seam with the pipeline ----*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// train-plan-remat compiles every candidate plan down to its buffers and
// measures its peak. The pipeline that compiles them is the one the step
// will be compiled with, which lives above the pass (lib/Pipelines): it is
// handed to the pass as a callback, as upstream's inliner takes its
// pipelines, so that the pass neither prints nor parses option text and
// the library does not call upward. From the command line, where no
// pipeline builds the pass, it takes `pipeline-options` as text instead.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRANSFORMS_REMAT_H
#define GA_TRANSFORMS_REMAT_H

#include "ga/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>

namespace ga {

/// How train-plan-remat compiles a candidate.
struct RematCandidatePipeline {
  /// Fills `pm` with the candidates' pipeline: the step's own, to its
  /// buffers, without a budget (`withoutOffload`: without host offload
  /// either); on failure, the reason in `error`.
  std::function<mlir::LogicalResult(mlir::OpPassManager &pm,
                                    bool withoutOffload, std::string &error)>
      build;
  /// Whether that pipeline offloads buffers to host memory.
  bool hostOffload = false;
};

/// train-plan-remat with its candidates compiled by `candidates` (its
/// `pipeline-options` unused).
std::unique_ptr<mlir::Pass>
createTrainPlanRematPass(const TrainPlanRematPassOptions &options,
                         RematCandidatePipeline candidates);

/// The checks of the budget and the micro-batch choice that the pipeline
/// and the pass share: "" when `memoryBudget` (bytes; 0: no planning) and
/// `chooseMicrobatches` go together, else the reason.
std::string checkRematOptions(int64_t memoryBudget, bool chooseMicrobatches);

} // namespace ga

#endif // GA_TRANSFORMS_REMAT_H
