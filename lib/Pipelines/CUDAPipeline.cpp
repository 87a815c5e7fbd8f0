//===- CUDAPipeline.cpp - target=cuda: kernels and the lowering -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The CUDA half of ga-pipeline: the CUDA-only options projected and checked
// (CudaTargetOptions, the one place that reads them), reductions split in two
// stages (on tensors), then, on the bufferized step, matrix products to cuBLAS,
// every other operation a kernel mapped to blocks and threads, the host code
// left touching device memory moved to the device, the kernels outlined and
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

std::optional<ga::CudaTargetOptions> ga::GaPipelineOptions::cudaTarget() const {
  if (target != Target::CUDA)
    return std::nullopt;
  CudaTargetOptions cuda;
  cuda.chip = chip;
  cuda.ptxFeatures = ptxFeatures;
  cuda.toolkit = cudaToolkit.empty() ? std::string(GA_CUDA_TOOLKIT_DIR)
                                     : cudaToolkit.getValue();
  cuda.format = gpuFormat;
  cuda.products = {gpuBlas, gpuTF32, gpuBF16, gpuBiasEpilogue};
  cuda.reductions = {gpuSplitReductions, gpuSplitMinLength, gpuSplitMinThreads,
                     gpuReductionLanes};
  cuda.kernels = {gpuBlockSize, gpuVectorWidth, gpuFusion,
                  gpuFusion && gpuRowFusion};
  cuda.emulate = gpuEmulate;
  cuda.prefetchGathers = gpuPrefetchGathers && memoryBudget == 0;
  cuda.kernelReport = kernelReport;
  cuda.device = device;
  if (hostOffload)
    cuda.offload = CudaTargetOptions::Offload{
        hostBandwidth, deviceTflops, offloadCopies, offloadMinBytes,
        offloadBudget > 0 ? offloadBudget : memoryBudget};
  return cuda;
}

LogicalResult ga::CudaTargetOptions::verify(raw_ostream &errors) const {
  if (toolkit.empty() && !emulate) {
    errors << "target=cuda needs the CUDA toolkit (ptxas, libdevice): "
              "none was found when ga-opt was configured; give "
              "cuda-toolkit=DIR";
    return failure();
  }
  if (device != "h100" && device != "h200") {
    errors << "device must be h100 or h200, got '" << device << "'";
    return failure();
  }
  if (!kernelReport.empty() && emulate) {
    errors << "kernel-report needs the device program: it reports the "
              "kernels of target=cuda, which gpu-emulate runs on the CPU "
              "instead";
    return failure();
  }
  if (!StringRef(chip).starts_with("sm_")) {
    errors << "chip must name an NVIDIA architecture such as sm_90, got '"
           << chip << "'";
    return failure();
  }
  if (kernels.blockSize < 1 || kernels.blockSize > 1024) {
    errors << "gpu-block-size must be in [1, 1024], got " << kernels.blockSize;
    return failure();
  }
  if (kernels.vectorWidth != 1 && kernels.vectorWidth != 2 &&
      kernels.vectorWidth != 4) {
    errors << "gpu-vector-width must be 1, 2 or 4, got " << kernels.vectorWidth;
    return failure();
  }
  if (products.tf32 && products.bf16) {
    errors << "gpu-tf32 and gpu-bf16 exclude each other (a product is "
              "either TF32 or bfloat16)";
    return failure();
  }
  if (!offload)
    return success();
  if (offload->budget <= 0) {
    errors << "host-offload needs memory-budget (it offloads only what "
              "the budget asks for)";
    return failure();
  }
  if (!(offload->hostBandwidth > 0)) {
    errors << "host-bandwidth must be positive (GB/s), got "
           << offload->hostBandwidth;
    return failure();
  }
  if (!(offload->deviceTflops > 0)) {
    errors << "device-tflops must be positive (TFLOP/s), got "
           << offload->deviceTflops;
    return failure();
  }
  return success();
}

void ga::detail::addCUDAKernels(OpPassManager &pm,
                                const CudaTargetOptions &cuda) {
  if (cuda.reductions.split) {
    GaGpuSplitReductionsPassOptions splitReductions;
    splitReductions.minLength = cuda.reductions.minLength;
    splitReductions.minThreads = cuda.reductions.minThreads;
    splitReductions.lanes = cuda.reductions.lanes;
    pm.addNestedPass<func::FuncOp>(
        createGaGpuSplitReductionsPass(splitReductions));
    pm.addPass(createCanonicalizerPass());
  }
}

/// target=cuda, from bufferized memrefs: kernels for every operation on
/// device memory, the host code in the LLVM dialect calling the CUDA runtime
/// (libga_cuda_runtime), the kernels compiled to a gpu.binary.
void ga::detail::addCUDALoweringFromBuffers(OpPassManager &pm,
                                            const GaPipelineOptions &options,
                                            const CudaTargetOptions &cuda) {
  if (cuda.products.blas) {
    ga::GaGpuGemmToBlasPassOptions blas;
    blas.allowTF32 = cuda.products.tf32;
    blas.allowBF16 = cuda.products.bf16;
    blas.biasEpilogue = cuda.products.biasEpilogue;
    pm.addPass(ga::createGaGpuGemmToBlasPass(blas));
  }
  ga::GaGpuMapParallelLoopsPassOptions mapping;
  mapping.blockSize = cuda.kernels.blockSize;
  mapping.vectorWidth = cuda.kernels.vectorWidth;
  mapping.fuseLoops = cuda.kernels.fusion;
  mapping.fuseRows = cuda.kernels.rowFusion;
  pm.addNestedPass<func::FuncOp>(ga::createGaGpuMapParallelLoopsPass(mapping));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  ga::GaGpuDeviceCodePassOptions deviceCode;
  deviceCode.fuseSingleThreads = cuda.kernels.fusion;
  pm.addPass(ga::createGaGpuDeviceCodePass(deviceCode));
  // Reductions' accumulators in registers (the same bits): with the other
  // kernel fusions.
  if (cuda.kernels.fusion)
    pm.addPass(ga::createGaGpuPromoteAccumulatorsPass());
  if (cuda.prefetchGathers)
    pm.addPass(ga::createGaGpuPrefetchGathersPass());
  if (cuda.emulate) {
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
  if (!cuda.kernelReport.empty()) {
    ga::GaGpuKernelReportPassOptions report;
    report.output = cuda.kernelReport;
    report.device = cuda.device;
    pm.addPass(ga::createGaGpuKernelReportPass(report));
  }
  // The target, once, with libdevice for the kernels' math (without it
  // math.exp stays a call to __nv_expf that ptxas cannot resolve).
  GpuNVVMAttachTargetOptions nvvm;
  nvvm.chip = cuda.chip;
  nvvm.features = cuda.ptxFeatures;
  nvvm.optLevel = 3;
  nvvm.linkLibs = {cuda.toolkit + "/nvvm/libdevice/libdevice.10.bc"};
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
  if (cuda.format != GpuFormat::None)
    ga::addGpuModuleToBinary(pm, cuda, cuda.format);
}

void ga::addGpuModuleToBinary(OpPassManager &pm, const CudaTargetOptions &cuda,
                              GpuFormat format) {
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = cuda.toolkit;
  binary.compilationTarget = choiceName(format).str();
  pm.addPass(createGpuModuleToBinaryPass(binary));
}
