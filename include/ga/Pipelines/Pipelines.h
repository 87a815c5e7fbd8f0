//===- Pipelines.h - The ga-opt pass pipelines ------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_PIPELINES_PIPELINES_H
#define GA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace ga {

/// Options of `--ga-pipeline`.
struct GaPipelineOptions : mlir::PassPipelineOptions<GaPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("Code generation target: cpu"),
                             llvm::cl::init("cpu")};
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Tile and vectorize the linalg operations where vector "
                     "code pays (ga-tile-and-vectorize); false keeps scalar "
                     "loops, the baseline of scripts/bench.py"),
      llvm::cl::init(true)};
  Option<bool> naive{
      *this, "naive",
      llvm::cl::desc("Split batches the usual, inexact way (train-split-batch "
                     "naive=true), to measure the error the exact split "
                     "removes"),
      llvm::cl::init(false)};
  Option<bool> checkLabels{
      *this, "check-labels",
      llvm::cl::desc("Check every cross-entropy label against [0, V) and "
                     "ignore_index when the step runs (train-check-labels); "
                     "false skips the check: invalid labels are then "
                     "clamped, not reported"),
      llvm::cl::init(true)};
};

/// What buildCPUPipeline builds.
struct CPUPipelineConfig {
  bool vectorize = true;
  bool naiveSplit = false;
  /// Insert train-check-labels (runtime label checks).
  bool checkLabels = true;
};

/// The CPU pipeline: records signatures, checks and splits the batch
/// schedule (normalizing mean losses first), differentiates, removes
/// checkpoints, lowers train ops to linalg and micro-batch loops to scf, tiles and vectorizes the linalg
/// operations that suit vector code (unless `vectorize` is false),
/// bufferizes (one-shot, function boundaries included, with buffer
/// deallocation), lowers the remaining linalg to loops and everything to the
/// LLVM dialect. Fails if an upstream pass is not registered.
mlir::LogicalResult buildCPUPipeline(mlir::OpPassManager &pm,
                                     llvm::raw_ostream &errors,
                                     const CPUPipelineConfig &config = {});

/// Registers `--ga-pipeline="target=cpu"`.
void registerGaPipelines();

} // namespace ga

#endif // GA_PIPELINES_PIPELINES_H
