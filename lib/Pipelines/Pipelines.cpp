//===- Pipelines.cpp - The ga-opt pass pipelines ---------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Pipelines/Pipelines.h"

#include "ga/Conversion/Passes.h"
#include "ga/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// Every stage after the train-specific ones is an upstream pass; the text
/// form keeps the list readable and identical to what a user would pass to
/// ga-opt to run the stages one by one.
static constexpr const char *kCPULowering =
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-deallocation-pipeline,"
    "func.func(convert-linalg-to-loops),"
    "func.func(lower-vector-multi-reduction,"
    "convert-vector-to-scf{full-unroll target-rank=1}),"
    "convert-math-to-llvm,convert-math-to-libm,"
    "convert-vector-to-llvm{vector-contract-lowering=outerproduct "
    "vector-transpose-lowering=shuffle1d},"
    "expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-ub-to-llvm,"
    "finalize-memref-to-llvm,"
    "convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
    "convert-func-to-llvm,reconcile-unrealized-casts";

LogicalResult ga::buildCPUPipeline(OpPassManager &pm, raw_ostream &errors,
                                   const CPUPipelineConfig &config) {
  pm.addPass(createTrainRecordSignaturesPass());
  // Label checks follow the labels to the function's arguments, through the
  // full-batch step: before the split slices them.
  if (config.checkLabels)
    pm.addNestedPass<func::FuncOp>(createTrainCheckLabelsPass());
  // train-split-batch runs the checks of train-check-decomposable itself.
  pm.addPass(createTrainNormalizeLossPass());
  TrainSplitBatchPassOptions split;
  split.naive = config.naiveSplit;
  pm.addPass(createTrainSplitBatchPass(split));
  pm.addPass(createTrainDifferentiatePass());
  pm.addPass(createTrainInlineCheckpointsPass());
  pm.addPass(createConvertTrainToLinalgPass());
  pm.addPass(createTrainLowerAccumulatePass());
  pm.addPass(createCanonicalizerPass());
  if (config.vectorize) {
    pm.addNestedPass<func::FuncOp>(createGaTileAndVectorizePass());
    pm.addPass(createCanonicalizerPass());
  }
  return parsePassPipeline(kCPULowering, pm, errors);
}

void ga::registerGaPipelines() {
  registerPassPipeline(
      "ga-pipeline",
      "The whole ga-opt pipeline: differentiate train.step operations and "
      "lower them for a target (target=cpu: to the LLVM dialect, ready for "
      "ga-run)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        GaPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (options.target != "cpu")
          return errorHandler("ga-pipeline: unknown target '" +
                              options.target + "' (available: cpu)");
        std::string errors;
        llvm::raw_string_ostream os(errors);
        CPUPipelineConfig config;
        config.vectorize = options.vectorize;
        config.naiveSplit = options.naive;
        config.checkLabels = options.checkLabels;
        if (failed(buildCPUPipeline(pm, os, config)))
          return errorHandler("ga-pipeline: " + errors);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(GaPipelineOptions());
      });
}
