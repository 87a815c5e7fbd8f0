//===- CUDAPipeline.cpp - target=cuda: kernels and the lowering -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The CUDA half of ga-pipeline: reductions split in two stages (on
// tensors), then, on the bufferized step, matrix products to cuBLAS, every
// other operation a kernel mapped to blocks and threads, the host code left
// touching device memory moved to the device, the kernels outlined and
// lowered to NVVM, the host tail (PipelineStages.h) with the launches, the
// step's buffers from the CUDA runtime, and the kernels compiled to a
// gpu.binary. The passes: lib/Codegen/CUDA/.
//
//===----------------------------------------------------------------------===//

#include "PipelineStages.h"

#include "ga/Codegen/CUDA/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ga::detail::addCUDAKernels(OpPassManager &pm,
                                const GaPipelineOptions &options) {
  if (options.gpuSplitReductions) {
    GaGpuSplitReductionsPassOptions splitReductions;
    splitReductions.minLength = options.gpuSplitMinLength;
    splitReductions.minThreads = options.gpuSplitMinThreads;
    splitReductions.lanes = options.gpuReductionLanes;
    pm.addNestedPass<func::FuncOp>(
        createGaGpuSplitReductionsPass(splitReductions));
    pm.addPass(createCanonicalizerPass());
  }
}

std::string ga::cudaToolkitPath(const GaPipelineOptions &options) {
  return options.cudaToolkit.empty() ? std::string(GA_CUDA_TOOLKIT_DIR)
                                     : options.cudaToolkit.getValue();
}

/// target=cuda, from bufferized memrefs: kernels for every operation on
/// device memory, the host code in the LLVM dialect calling the CUDA runtime
/// (libga_cuda_runtime), the kernels compiled to a gpu.binary.
void ga::detail::addCUDALoweringFromBuffers(OpPassManager &pm,
                                            const GaPipelineOptions &options) {
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
  mapping.fuseLoops = options.gpuFusion;
  mapping.fuseRows = options.gpuFusion && options.gpuRowFusion;
  pm.addNestedPass<func::FuncOp>(ga::createGaGpuMapParallelLoopsPass(mapping));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  ga::GaGpuDeviceCodePassOptions deviceCode;
  deviceCode.fuseSingleThreads = options.gpuFusion;
  pm.addPass(ga::createGaGpuDeviceCodePass(deviceCode));
  if (options.gpuEmulate) {
    // The device program on the CPU, one launch after the other.
    pm.addPass(ga::createGaGpuEmulateOnHostPass());
    pm.addPass(createCanonicalizerPass());
    GaPipelineOptions host;
    host.copyOptionValuesFrom(options);
    host.parallel = false;
    ga::addCPULoweringFromBuffers(pm, host);
    return;
  }
  pm.addPass(createGpuKernelOutliningPass());
  // One device module per distinct kernel: the layers of a model launch the
  // same kernels, which would otherwise be compiled once per launch.
  pm.addPass(ga::createGaGpuDedupKernelsPass());
  // The target, once, with libdevice for the kernels' math (without it
  // math.exp stays a call to __nv_expf that ptxas cannot resolve).
  std::string toolkit = cudaToolkitPath(options);
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
  ga::detail::addHostToLLVM(pm, ga::detail::HostTail::GPULaunches);
  pm.addPass(ga::createGaGpuDeviceAllocationsPass());
  if (options.gpuFormat != "none")
    ga::addGpuModuleToBinary(pm, options, options.gpuFormat);
}

void ga::addGpuModuleToBinary(OpPassManager &pm,
                              const GaPipelineOptions &options,
                              StringRef format) {
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = cudaToolkitPath(options);
  binary.compilationTarget = format.str();
  pm.addPass(createGpuModuleToBinaryPass(binary));
}
