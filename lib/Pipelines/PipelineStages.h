//===- PipelineStages.h - The stages of ga-pipeline per target --*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The builders that buildGaPipeline (Pipelines.cpp) calls for each target
// (CPUPipeline.cpp, CUDAPipeline.cpp), and the stages they share
// (PipelineStages.cpp: bufferization, the host tail), which call nothing
// above them.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_PIPELINES_PIPELINESTAGES_H
#define GA_LIB_PIPELINES_PIPELINESTAGES_H

#include "ga/Pipelines/Pipelines.h"

namespace ga::detail {

/// target=cpu, on tensors after fusion: kernel functions (outline), tiled
/// and vectorized (vectorize).
void addCPUKernels(mlir::OpPassManager &pm, const GaPipelineOptions &options);

// The builders take the CUDA-only options as buildGaPipeline projected them
// once (GaPipelineOptions::cudaTarget).

/// target=cuda, on tensors after fusion: reductions in two stages
/// (gpu-split-reductions).
void addCUDAKernels(mlir::OpPassManager &pm, const CudaTargetOptions &cuda);

/// target=cuda, from bufferized memrefs: kernels for every operation on
/// device memory, the host code in the LLVM dialect calling the CUDA runtime
/// (libga_cuda_runtime), the kernels compiled to a gpu.binary (unless
/// gpu-format=none); with gpu-emulate, the device program lowered for the
/// CPU instead.
void addCUDALoweringFromBuffers(mlir::OpPassManager &pm,
                                const GaPipelineOptions &options,
                                const CudaTargetOptions &cuda);

/// The device memory held beside a step whatever its buffers: cuBLAS's
/// workspace on target=cuda with gpu-blas (the planner and host offload
/// both count it).
int64_t deviceFixedBytes(const std::optional<CudaTargetOptions> &cuda);

/// Bufferization, with deallocation after each buffer's last use, then
/// host offload where the options ask for it (`cuda`: the options'
/// projection, GaPipelineOptions::cudaTarget).
void addBufferization(mlir::OpPassManager &pm, const GaPipelineOptions &options,
                      const std::optional<CudaTargetOptions> &cuda);

/// What the host code's lowering to the LLVM dialect ends with besides the
/// memref, arith, index, control flow and func conversions.
enum class HostTail { Plain, OpenMP, GPULaunches };

/// The host code to the LLVM dialect (both targets): ub, memref (MLIR's
/// generic allocation functions), arith, index, cf, func, then OpenMP or the
/// GPU launches, and the casts reconciled.
void addHostToLLVM(mlir::OpPassManager &pm, HostTail tail);

} // namespace ga::detail

#endif // GA_LIB_PIPELINES_PIPELINESTAGES_H
