//===- Pipelines.cpp - The ga-opt pass pipelines --------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Pipelines/Pipelines.h"

#include "ga/Conversion/Passes.h"
#include "ga/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// Bufferization, with deallocation after each buffer's last use.
static void addCPUBufferization(OpPassManager &pm,
                                const ga::GaPipelineOptions &options) {
  // Function boundaries bufferize too: public functions to plain
  // (identity-layout) memrefs, since ga-run passes the arguments as
  // contiguous descriptors; kernels to memrefs with any offset, written in
  // place. The kernels' results that alias their inits go before the
  // deallocation pipeline, which would otherwise copy them to own them:
  // canonicalization folds the tile loops' memref iteration arguments (each
  // yields its own argument) so that a kernel returns its argument itself,
  // and drop-equivalent-buffer-results removes such results.
  pm.addPass(ga::createGaBufferizePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  // MLIR's buffer-deallocation-pipeline, with ga-split-deallocations
  // before its simplification: ownership-based deallocation ends the step
  // with one dealloc of all its buffers, which the simplification would
  // take apart by pairwise alias queries (quadratic in the depth).
  pm.addPass(memref::createExpandReallocPass(
      memref::ExpandReallocPassOptions{/*emitDeallocs=*/false}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(ga::createGaSplitDeallocationsPass());
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // The deallocation pipeline frees buffers at the end of their block: each
  // is freed after its last use instead, and the copies of returned buffers
  // go, so that the step holds only what it still reads (the memory model,
  // ga/Analysis/BufferMemory.h, reads the IR from here).
  if (options.releaseBuffers) {
    pm.addNestedPass<func::FuncOp>(ga::createGaReleaseBuffersPass());
    pm.addPass(createCanonicalizerPass());
  }
  // A clone that deallocation keeps (a returned view of an argument, a
  // result computed into its argument) becomes an allocation and a copy:
  // the memory model counts it, the CPU copies with the runtime's
  // memrefCopy, the CUDA target's mapping turns the copy into a kernel.
  pm.addPass(createConvertBufferizationToMemRefPass());
}

void ga::addCPULoweringFromBuffers(OpPassManager &pm,
                                   const GaPipelineOptions &options) {
  // On buffers, after deallocation (whose analysis does not know
  // scf.parallel): the parallel tile loops go to OpenMP threads.
  if (options.parallel) {
    pm.addPass(ga::createGaParallelizeLoopsPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    // The loop bodies' memref.alloca_scope, which no alloca needs here, is
    // inlined: scf-to-cf would give it several blocks, which it may not have.
    pm.addPass(createCanonicalizerPass());
  }
  // What ga-tile-and-vectorize left as linalg becomes scalar loops; its
  // vector code is lowered to one-dimensional, fully unrolled transfers.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass());
  VectorTransferToSCFOptions transfers;
  transfers.enableFullUnroll(true).setTargetRank(1);
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(transfers));
  // exp and erf as vector polynomials, then math intrinsics, then libm
  // calls for the rest.
  if (options.approximateMath)
    pm.addPass(ga::createGaApproximateMathPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  ConvertVectorToLLVMPassOptions vectors;
  vectors.vectorContractLowering = vector::VectorContractLowering::OuterProduct;
  vectors.vectorTransposeLowering = vector::VectorTransposeLowering::Shuffle1D;
  pm.addPass(createConvertVectorToLLVMPass(vectors));
  // Subviews into plain descriptors before memrefs go to LLVM.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createUBToLLVMConversionPass());
  // Allocations call MLIR's generic allocation functions, which
  // libga_runtime defines over malloc and counts: runs report the peak of
  // the step's buffers (ga_memory_stats).
  FinalizeMemRefToLLVMConversionPassOptions memrefs;
  memrefs.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefs));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The CUDA toolkit of `options`, or the one found at configure time.
static std::string cudaToolkitOf(const ga::GaPipelineOptions &options) {
  return options.cudaToolkit.empty() ? std::string(GA_CUDA_TOOLKIT_DIR)
                                     : options.cudaToolkit.getValue();
}

/// target=cuda, from bufferized memrefs: kernels for every operation on
/// device memory, the host code in the LLVM dialect calling the CUDA runtime
/// (libga_cuda_runtime), the kernels compiled to a gpu.binary.
static void addCUDALoweringFromBuffers(OpPassManager &pm,
                                       const ga::GaPipelineOptions &options) {
  if (options.gpuBlas) {
    ga::GaGpuGemmToBlasPassOptions blas;
    blas.allowTF32 = options.gpuTF32;
    blas.allowBF16 = options.gpuBF16;
    blas.biasEpilogue = options.gpuBiasEpilogue;
    pm.addPass(ga::createGaGpuGemmToBlasPass(blas));
  }
  ga::GaGpuMapParallelLoopsPassOptions mapping;
  mapping.blockSize = options.gpuBlockSize;
  mapping.vectorWidth = options.gpuVectorWidth;
  pm.addNestedPass<func::FuncOp>(ga::createGaGpuMapParallelLoopsPass(mapping));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(ga::createGaGpuDeviceCodePass());
  if (options.gpuEmulate) {
    // The device program on the CPU, one launch after the other.
    pm.addPass(ga::createGaGpuEmulateOnHostPass());
    pm.addPass(createCanonicalizerPass());
    ga::GaPipelineOptions host;
    host.copyOptionValuesFrom(options);
    host.parallel = false;
    ga::addCPULoweringFromBuffers(pm, host);
    return;
  }
  pm.addPass(createGpuKernelOutliningPass());
  // The target, once, with libdevice for the kernels' math (without it
  // math.exp stays a call to __nv_expf that ptxas cannot resolve).
  std::string toolkit = cudaToolkitOf(options);
  GpuNVVMAttachTargetOptions nvvm;
  nvvm.chip = options.chip;
  nvvm.features = options.ptxFeatures;
  nvvm.optLevel = 3;
  nvvm.linkLibs = {toolkit + "/nvvm/libdevice/libdevice.10.bc"};
  pm.addPass(createGpuNVVMAttachTarget(nvvm));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // The kernels.
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // The host code: as on the CPU, then the launches and the runtime's
  // allocation functions.
  pm.addPass(createUBToLLVMConversionPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefs;
  memrefs.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefs));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(ga::createGaGpuDeviceAllocationsPass());
  if (options.gpuFormat != "none")
    ga::addGpuModuleToBinary(pm, options, options.gpuFormat);
}

std::string ga::cudaToolkitPath(const GaPipelineOptions &options) {
  return cudaToolkitOf(options);
}

void ga::addGpuModuleToBinary(OpPassManager &pm,
                              const GaPipelineOptions &options,
                              StringRef format) {
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = cudaToolkitOf(options);
  binary.compilationTarget = format.str();
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

LogicalResult ga::buildCPUPipeline(OpPassManager &pm, raw_ostream &errors,
                                   const GaPipelineOptions &options) {
  bool cuda = options.target == "cuda";
  if (options.target != "cpu" && !cuda) {
    errors << "unknown target '" << options.target
           << "' (available: cpu, cuda)";
    return failure();
  }
  if (cuda) {
    std::string toolkit = cudaToolkitOf(options);
    if (toolkit.empty() && !options.gpuEmulate) {
      errors << "target=cuda needs the CUDA toolkit (ptxas, libdevice): "
                "none was found when ga-opt was configured; give "
                "cuda-toolkit=DIR";
      return failure();
    }
    if (!llvm::StringRef(options.chip).starts_with("sm_")) {
      errors << "chip must name an NVIDIA architecture such as sm_90, got '"
             << options.chip.getValue() << "'";
      return failure();
    }
    if (options.gpuFormat != "bin" && options.gpuFormat != "fatbin" &&
        options.gpuFormat != "isa" && options.gpuFormat != "none") {
      errors << "gpu-format must be bin, fatbin, isa or none, got '"
             << options.gpuFormat.getValue() << "'";
      return failure();
    }
    if (options.gpuBlockSize < 1 || options.gpuBlockSize > 1024) {
      errors << "gpu-block-size must be in [1, 1024], got "
             << options.gpuBlockSize.getValue();
      return failure();
    }
    if (options.gpuVectorWidth != 1 && options.gpuVectorWidth != 2 &&
        options.gpuVectorWidth != 4) {
      errors << "gpu-vector-width must be 1, 2 or 4, got "
             << options.gpuVectorWidth.getValue();
      return failure();
    }
    if (options.gpuTF32 && options.gpuBF16) {
      errors << "gpu-tf32 and gpu-bf16 exclude each other (a product is "
                "either TF32 or bfloat16)";
      return failure();
    }
  }
  if (options.lossChunkRows < 0) {
    errors << "loss-chunk-rows must be 0 (off) or positive, got "
           << options.lossChunkRows.getValue();
    return failure();
  }
  if (!options.microbatches.empty() && options.microbatches != "auto") {
    errors << "microbatches must be 'auto' or empty, got '"
           << options.microbatches.getValue() << "'";
    return failure();
  }
  if (options.microbatches == "auto" && options.memoryBudget <= 0) {
    errors << "microbatches=auto needs memory-budget (the planner chooses "
           << "the count that fits it)";
    return failure();
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
  // Rematerialization next: the planner compiles each candidate with this
  // pipeline (without a budget) and reads its peak from the memory model.
  if (options.memoryBudget > 0) {
    TrainPlanRematPassOptions remat;
    remat.memoryBudget = options.memoryBudget;
    remat.microbatches = options.microbatches;
    // Every option of this pipeline, as its own printer writes them (a new
    // option cannot be forgotten), but the budget: the planner compiles
    // each candidate without one, to buffers (it reads their peaks).
    ga::GaPipelineOptions unplanned;
    unplanned.copyOptionValuesFrom(options);
    unplanned.memoryBudget = 0;
    unplanned.microbatches = "";
    unplanned.buffersOnly = true;
    std::string text;
    llvm::raw_string_ostream os(text);
    unplanned.print(os);
    // print() writes `{a=1 b=2}`; the planner adds its own options.
    remat.pipelineOptions = StringRef(text).drop_front().drop_back().str();
    pm.addPass(createTrainPlanRematPass(remat));
  }
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
  pm.addPass(createTrainSplitBatchPass(split));
  // Differentiation sees the accumulate bodies (one micro-batch each).
  pm.addPass(createTrainDifferentiatePass());
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
  pm.addPass(createConvertTrainToLinalgPass());
  pm.addPass(createTrainLowerAccumulatePass());
  pm.addPass(createCanonicalizerPass());
  // Also after train-lower-accumulate: fused producers would hide the
  // gradients' producers from its in-place accumulation.
  if (options.fuse)
    pm.addPass(createGaFuseElementwisePass());
  // After train-lower-accumulate, whose in-place accumulation reads the
  // producers of the gradients; before everything whose cost grows with the
  // code: each distinct operation is tiled, vectorized and compiled once.
  // Kernel functions and vector code are the CPU's: the CUDA target maps
  // each linalg operation of the step to a GPU kernel itself.
  if (cuda && options.gpuSplitReductions) {
    GaGpuSplitReductionsPassOptions splitReductions;
    splitReductions.minLength = options.gpuSplitMinLength;
    splitReductions.lanes = options.gpuReductionLanes;
    pm.addNestedPass<func::FuncOp>(
        createGaGpuSplitReductionsPass(splitReductions));
    pm.addPass(createCanonicalizerPass());
  }
  if (options.outline && !cuda)
    pm.addPass(createGaOutlineKernelsPass());
  if (options.vectorize && !cuda) {
    pm.addNestedPass<func::FuncOp>(createGaTileAndVectorizePass());
    pm.addPass(createCanonicalizerPass());
  }
  addCPUBufferization(pm, options);
  if (options.buffersOnly)
    return success();
  if (cuda)
    addCUDALoweringFromBuffers(pm, options);
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
        if (failed(buildCPUPipeline(pm, os, options)))
          return errorHandler("ga-pipeline: " + errors);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(GaPipelineOptions());
      });
}
