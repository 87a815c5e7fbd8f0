//===- CPUPipeline.cpp - target=cpu: kernels and the lowering -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The CPU half of ga-pipeline: each distinct linalg operation outlined
// into a kernel function, tiled and vectorized (on tensors), then, on the
// bufferized step, parallel tile loops to OpenMP, the remaining linalg to
// loops, vector and math code to LLVM, and the host tail
// (PipelineStages.h).
//
//===----------------------------------------------------------------------===//

#include "PipelineStages.h"

#include "ga/Codegen/CPU/Passes.h"
#include "ga/Codegen/Common/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ga::detail::addCPUKernels(OpPassManager &pm,
                               const GaPipelineOptions &options) {
  if (options.outline)
    pm.addPass(createGaOutlineKernelsPass());
  if (options.vectorize) {
    pm.addNestedPass<func::FuncOp>(createGaTileAndVectorizePass());
    pm.addPass(createCanonicalizerPass());
  }
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
  pm.addPass(ga::createGaExpandIntegerMathPass());
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
  ga::detail::addHostToLLVM(pm, options.parallel ? ga::detail::HostTail::OpenMP
                                                 : ga::detail::HostTail::Plain);
}
