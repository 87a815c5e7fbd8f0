//===- PipelineStages.cpp - The stages the pipeline's files share ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The stages that more than one of the pipeline's files build: the device
// memory every budget counts beside the buffers, bufferization with
// deallocation after each buffer's last use (and host offload), and the
// host code's lowering to the LLVM dialect that both targets end with.
// Pipelines.cpp, CPUPipeline.cpp and CUDAPipeline.cpp call down into this
// file; it calls none of them.
//
//===----------------------------------------------------------------------===//

#include "PipelineStages.h"

#include "ga/Codegen/CUDA/Passes.h"
#include "ga/Codegen/Common/Passes.h"
#include "ga/Runtime/ga_cuda.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// The device memory held beside a step whatever its buffers: cuBLAS's
/// workspace on target=cuda with gpu-blas (the planner and host offload
/// both count it).
int64_t
ga::detail::deviceFixedBytes(const std::optional<ga::CudaTargetOptions> &cuda) {
  return cuda && cuda->products.blas
             ? static_cast<int64_t>(GA_CUDA_BLAS_WORKSPACE_BYTES)
             : 0;
}

/// Bufferization, with deallocation after each buffer's last use.
void ga::detail::addBufferization(
    OpPassManager &pm, const ga::GaPipelineOptions &options,
    const std::optional<ga::CudaTargetOptions> &cuda) {
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
  // What the budget still asks for, from the buffers the step does not read
  // for a while: the memory model reads the IR from here.
  if (cuda && cuda->offload) {
    ga::GaGpuOffloadBuffersPassOptions offload;
    offload.budget = cuda->offload->budget;
    offload.fixedBytes = ga::detail::deviceFixedBytes(cuda);
    offload.hostBandwidth = cuda->offload->hostBandwidth;
    offload.minBytes = cuda->offload->minBytes;
    offload.copies = cuda->offload->copies;
    offload.deviceTflops = cuda->offload->deviceTflops;
    pm.addPass(ga::createGaGpuOffloadBuffersPass(offload));
  }
}

void ga::detail::addHostToLLVM(OpPassManager &pm, HostTail tail) {
  pm.addPass(createUBToLLVMConversionPass());
  // Allocations call MLIR's generic allocation functions, which
  // libga_runtime defines over malloc and counts: runs report the peak of
  // the step's buffers (ga_memory_stats); on the CUDA target,
  // ga-gpu-device-allocations then gives them to the CUDA runtime.
  FinalizeMemRefToLLVMConversionPassOptions memrefs;
  memrefs.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefs));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  if (tail == HostTail::OpenMP)
    pm.addPass(createConvertOpenMPToLLVMPass());
  if (tail == HostTail::GPULaunches)
    pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
