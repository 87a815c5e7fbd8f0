//===- Pipelines.cpp - The ga-opt pass pipelines --------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-pipeline, the part both targets share: the options checked, the
// train-level passes (import legalization, asserts, remat planning,
// signatures, label checks, the batch split, differentiation, the lowering
// of train ops and micro-batch loops, fusion), the target's kernels on
// tensors, bufferization with deallocation, then the target's lowering
// (CPUPipeline.cpp, CUDAPipeline.cpp), both ending in the host tail. The
// stages more than one of these files build (bufferization, the host
// tail) live in PipelineStages.cpp, below all three: no call runs back up.
//
//===----------------------------------------------------------------------===//

#include "ga/Pipelines/Pipelines.h"
#include "PipelineStages.h"

#include "ga/Codegen/CUDA/Passes.h"
#include "ga/Codegen/Common/Passes.h"
#include "ga/Conversion/Passes.h"
#include "ga/Runtime/ga_cuda.h"
#include "ga/Transforms/Passes.h"
#include "ga/Transforms/Remat.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

void ga::GaPipelineOptions::forEachOption(
    function_ref<void(StringRef, StringRef)> fn) const {
  // The options register in the struct's own subcommand, by name.
  SmallVector<std::pair<StringRef, StringRef>> options;
  for (const auto &entry : OptionsMap)
    options.push_back({entry.first, entry.second->HelpStr});
  llvm::sort(options);
  for (auto [name, help] : options)
    fn(name, help);
}

LogicalResult ga::GaPipelineOptions::verify(raw_ostream &errors) const {
  // The choices (target, gpu-format, precision, batch-statistics,
  // offload-copies) are checked as they are parsed (ga/Utils/Choices.h).
  if (std::optional<CudaTargetOptions> cuda = cudaTarget()) {
    if (failed(cuda->verify(errors)))
      return failure();
    if (bf16Products() && (cuda->products.tf32 || cuda->products.bf16)) {
      errors << "precision=" << choiceName(precision.getValue()) << " with gpu-"
             << (cuda->products.tf32 ? "tf32" : "bf16")
             << ": the products already read bfloat16 inputs";
      return failure();
    }
    if (cuda->products.bf16 && memoryBudget > 0) {
      errors << "memory-budget with gpu-bf16: the runtime's bfloat16 "
                "copies of each product's operands are not in the memory "
                "model yet, so the budget could not be kept; "
                "precision=bf16-mixed makes the copies in the step, where "
                "the budget counts them";
      return failure();
    }
  } else if (hostOffload) {
    errors << "host-offload needs target=cuda (on the CPU the host memory "
              "is the step's memory)";
    return failure();
  }
  if (attentionKeyTile < 0) {
    errors << "attention-key-tile must be 0 (off) or positive, got "
           << attentionKeyTile.getValue();
    return failure();
  }
  if (attention == AttentionForm::Unfused && attentionKeyTile > 0) {
    errors << "attention-key-tile=" << attentionKeyTile.getValue()
           << " with attention=unfused: the tiles are those of "
              "attention=tiles";
    return failure();
  }
  if (attention == AttentionForm::Library && target == Target::CUDA &&
      !bf16Products()) {
    errors << "attention=library on target=cuda needs precision=bf16-mixed "
              "or bf16: "
              "cuDNN's fused attention reads bfloat16 operands and has no "
              "float32 form (a float32 step takes attention=tiles)";
    return failure();
  }
  if (lossChunkRows < 0) {
    errors << "loss-chunk-rows must be 0 (off) or positive, got "
           << lossChunkRows.getValue();
    return failure();
  }
  if (microbatches < 0) {
    errors << "microbatches must be at least 1 (0: as written in the "
              "step), got "
           << microbatches.getValue();
    return failure();
  }
  if (dataParallel < 0) {
    errors << "data-parallel must be at least 1 (0: as written in the "
              "step), got "
           << dataParallel.getValue();
    return failure();
  }
  if (shard < -1 || shard > 3) {
    errors << "shard must be a stage from 0 to 3 (-1: as written in the "
              "step), got "
           << shard.getValue();
    return failure();
  }
  if (chooseMicrobatches && microbatches > 0) {
    errors << "microbatches=" << microbatches.getValue()
           << " fixes the micro-batch count and choose-microbatches=true "
              "lets the planner choose it: give one";
    return failure();
  }
  if (std::string error = checkRematOptions(memoryBudget, chooseMicrobatches);
      !error.empty()) {
    errors << error;
    return failure();
  }
  return success();
}

namespace ga {

/// The front end's forms and the step's own, before anything reads the
/// step: the count of microbatches=K, import legalization, asserts, the
/// sliced matmul rows, attention raised.
static void addStepForms(OpPassManager &pm,
                         const ga::GaPipelineOptions &options) {
  // microbatches=K, data-parallel=R, shard=S: the steps' schedule, before
  // any pass reads it.
  if (options.microbatches > 0 || options.dataParallel > 0 ||
      options.shard >= 0) {
    TrainSetSchedulePassOptions schedule;
    schedule.microbatches = options.microbatches;
    schedule.dataParallel = options.dataParallel;
    schedule.shard = options.shard;
    pm.addPass(createTrainSetSchedulePass(schedule));
  }
  // A front end's linalg in the forms the passes below take (values
  // unchanged; a no-op on ga-opt's own forms).
  pm.addPass(createGaLegalizeImportPass());
  // Front ends' asserts next: they become checks before the step, so that
  // every later pass sees a step without side effects.
  {
    TrainCheckAssertsPassOptions asserts;
    asserts.report = options.checkAsserts;
    pm.addPass(createTrainCheckAssertsPass(asserts));
  }
  // The step's own form first, so that the remat planner sees the matmuls
  // it will compile: the rows no slice reads are not computed, and the LM
  // head's logits become a whole tensor that the loss's gradient overwrites
  // (convert-train-to-linalg).
  if (options.sliceMatmulRows)
    pm.addPass(createGaSliceMatmulRowsPass());
  // Attention as one op, before the planner, which then counts what its
  // gradient reads (the operands and the log-sum-exp, not the
  // probabilities).
  if (options.attentionForm() != AttentionForm::Unfused) {
    TrainRaiseAttentionPassOptions attention;
    attention.keyTile = options.attentionKeyTile > 0
                            ? options.attentionKeyTile.getValue()
                            : ga::kDefaultAttentionKeyTile;
    attention.report = options.reportAttention;
    pm.addPass(createTrainRaiseAttentionPass(attention));
  }
}

AttentionForm ga::GaPipelineOptions::attentionForm() const {
  if (attention != AttentionForm::Auto)
    return attention;
  // On the device, the raised attention over tiles by default: with one
  // tile of S = 1024 the step takes the time of the one that stores the
  // [B, H, S, S] probabilities, in less memory (docs/cuda.md, measured on
  // an H200). On the CPU the tiles cost time (docs/memory.md): only where
  // asked for.
  if (target == Target::CUDA || attentionKeyTile > 0)
    return AttentionForm::Tiles;
  return AttentionForm::Unfused;
}

/// The remat planner (memory-budget): it compiles each candidate with this
/// pipeline, without a budget and to buffers, and reads its peak from the
/// memory model.
static void addRematPlanner(OpPassManager &pm,
                            const ga::GaPipelineOptions &options,
                            const std::optional<ga::CudaTargetOptions> &cuda) {
  TrainPlanRematPassOptions remat;
  remat.memoryBudget = options.memoryBudget;
  remat.chooseMicrobatches = options.chooseMicrobatches;
  // On the device, what the CUDA runtime's caching allocator holds, and
  // cuBLAS's workspace.
  remat.deviceAllocator = cuda.has_value();
  remat.deviceFixedBytes = ga::detail::deviceFixedBytes(cuda);
  // Every option of this pipeline (a new option cannot be forgotten) but
  // the budget: the planner compiles each candidate without one, to
  // buffers (it reads their peaks).
  auto unplanned = std::make_shared<ga::GaPipelineOptions>();
  unplanned->copyOptionValuesFrom(options);
  unplanned->memoryBudget = 0;
  // The count is the planner's to set on each candidate.
  unplanned->microbatches = 0;
  unplanned->chooseMicrobatches = false;
  unplanned->buffersOnly = true;
  // Each candidate offloads what it must to fit the same budget.
  bool offload = cuda && cuda->offload;
  if (offload)
    unplanned->offloadBudget = cuda->offload->budget;
  RematCandidatePipeline candidates;
  candidates.hostOffload = offload;
  candidates.build = [unplanned](OpPassManager &candidatePm,
                                 bool withoutOffload, std::string &error) {
    ga::GaPipelineOptions candidate;
    candidate.copyOptionValuesFrom(*unplanned);
    if (withoutOffload)
      candidate.hostOffload = false;
    llvm::raw_string_ostream os(error);
    return buildGaPipeline(candidatePm, os, candidate);
  };
  pm.addPass(createTrainPlanRematPass(remat, std::move(candidates)));
}

/// The batch schedule and differentiation, down to linalg on tensors:
/// signatures, label checks, the loss normalized and the batch split,
/// the gradients, chunked loss heads, the train ops and micro-batch loops
/// lowered, mixed precision, fusion.
static void addTrainToLinalg(OpPassManager &pm,
                             const ga::GaPipelineOptions &options,
                             const std::optional<ga::CudaTargetOptions> &cuda) {
  // First, while the functions still have their tensor signatures.
  pm.addPass(createTrainRecordSignaturesPass());
  // Label checks follow the labels to the function's arguments, through the
  // full-batch step: before the split slices them.
  if (options.checkLabels)
    pm.addNestedPass<func::FuncOp>(createTrainCheckLabelsPass());
  // train-split-batch runs the checks of train-check-decomposable and this
  // rewrite itself; running it first keeps --mlir-print-ir-after readable.
  pm.addPass(createTrainNormalizeLossPass());
  TrainSplitBatchPassOptions split;
  split.naive = options.naive;
  split.statisticsPrepass = options.batchStatistics == BatchStatistics::Prepass;
  pm.addPass(createTrainSplitBatchPass(split));
  // The ranks' shards of the optimizer's state (and gradients), on the
  // split's collectives and the optimizer's ops.
  pm.addPass(createTrainShardStatePass());
  // Differentiation sees the accumulate bodies (one micro-batch each).
  // precision=bf16 rounds the per-example products' results, which the
  // differentiated bodies' analysis marks.
  {
    TrainDifferentiatePassOptions differentiate;
    differentiate.markPerExample = options.precision == Precision::BF16;
    pm.addPass(createTrainDifferentiatePass(differentiate));
  }
  pm.addPass(createTrainInlineCheckpointsPass());
  // On the differentiated train ops, before they are lowered: the loss and
  // its gradient must still be the train ops it matches.
  if (options.lossChunkRows > 0) {
    GaChunkLossHeadPassOptions chunk;
    chunk.chunkRows = options.lossChunkRows;
    pm.addPass(createGaChunkLossHeadPass(chunk));
  }
  // Train ops are lowered inside the accumulate bodies before the loops
  // are: train-lower-accumulate refuses a body with train ops left.
  {
    ConvertTrainToLinalgPassOptions lowering;
    if (options.attentionForm() == AttentionForm::Library) {
      // The CPU runtime's reference takes every attention; cuDNN's, on
      // target=cuda, causal ones without the log-sum-exp's cotangent.
      // Both in bfloat16 with bf16-mixed, so that the emulated device
      // program computes the CPU's values.
      lowering.attentionCalls = options.bf16Products() ? "bf16" : "native";
      lowering.attentionCallMasks = !cuda;
      lowering.attentionCallDlse = !cuda;
    }
    lowering.reportAttention = options.reportAttention;
    pm.addPass(createConvertTrainToLinalgPass(lowering));
  }
  pm.addPass(createTrainLowerAccumulatePass());
  pm.addPass(createCanonicalizerPass());
  // Stages 2 and 3: each gradient reduce-scattered as soon as it is made,
  // the micro-batch loop accumulating the rank's shards (unless
  // shard-accumulators=false).
  TrainShardAccumulatorsPassOptions accumulators;
  accumulators.microbatchShards = options.shardAccumulators;
  OpPassManager &functions = pm.nest<func::FuncOp>();
  functions.addPass(createTrainShardAccumulatorsPass(accumulators));
  // Stage 3's parameters, gathered at the function's entry by
  // train-shard-state, gathered again before each operation (of the step or
  // its micro-batch loop) that reads them, now that the backward and the
  // loops are there.
  functions.addPass(createTrainGatherAtUsePass());
  // bf16-mixed: after train-lower-accumulate, whose in-place accumulation
  // reads the products that compute the gradients; before fusion, which
  // then fuses the roundings like any elementwise producer.
  if (options.bf16Products()) {
    GaMixedPrecisionPassOptions mixed;
    mixed.roundResults = options.precision == Precision::BF16;
    pm.addPass(createGaMixedPrecisionPass(mixed));
  }
  // Also after train-lower-accumulate: fused producers would hide the
  // gradients' producers from its in-place accumulation.
  if (options.fuse) {
    GaFuseElementwisePassOptions fuse;
    fuse.intoReductions = cuda && cuda->kernels.fusion;
    fuse.recomputeCheap = cuda && cuda->kernels.fusion;
    pm.addPass(createGaFuseElementwisePass(fuse));
  }
}

} // namespace ga

LogicalResult ga::buildGaPipeline(OpPassManager &pm, raw_ostream &errors,
                                  const GaPipelineOptions &options) {
  if (failed(options.verify(errors)))
    return failure();
  std::optional<CudaTargetOptions> cuda = options.cudaTarget();
  addStepForms(pm, options);
  // Rematerialization next, on the step's own forms.
  if (options.memoryBudget > 0)
    addRematPlanner(pm, options, cuda);
  addTrainToLinalg(pm, options, cuda);
  // After train-lower-accumulate, whose in-place accumulation reads the
  // producers of the gradients; before everything whose cost grows with the
  // code: each distinct operation is tiled, vectorized and compiled once.
  // Kernel functions and vector code are the CPU's: the CUDA target maps
  // each linalg operation of the step to a GPU kernel itself.
  if (cuda)
    detail::addCUDAKernels(pm, *cuda);
  else
    detail::addCPUKernels(pm, options);
  ga::detail::addBufferization(pm, options, cuda);
  if (options.buffersOnly)
    return success();
  if (cuda)
    detail::addCUDALoweringFromBuffers(pm, options, *cuda);
  else
    addCPULoweringFromBuffers(pm, options);
  return success();
}

void ga::registerGaPipelines() {
  registerPassPipeline(
      "ga-pipeline",
      "The whole ga-opt pipeline: differentiate train.step operations and "
      "lower them for a target (target=cpu: to the LLVM dialect, ready for "
      "ga-run; target=cuda: host code in the LLVM dialect and GPU kernels "
      "compiled for chip, ready for ga-compile --target=cuda)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        GaPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string errors;
        llvm::raw_string_ostream os(errors);
        if (failed(buildGaPipeline(pm, os, options)))
          return errorHandler("ga-pipeline: " + errors);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(GaPipelineOptions());
      });
}
