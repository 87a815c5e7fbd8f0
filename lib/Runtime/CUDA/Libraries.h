//===- Libraries.h - The CUDA libraries the runtime calls, as tables ------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The few types of the CUDA driver, cuBLAS, cuBLASLt and NCCL ABIs that the
// runtime uses (handles and descriptors as opaque pointers, enumerations as
// ints), and each library's functions as one symbol table (Symbols.h).
// `true` marks a function the runtime cannot do without; an optional one
// is checked where it is used.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_RUNTIME_CUDA_LIBRARIES_H
#define GA_LIB_RUNTIME_CUDA_LIBRARIES_H

#include "Symbols.h"

#include <cstddef>
#include <cstdint>

// Internal to libga_cuda_runtime: not exported.
#pragma GCC visibility push(hidden)
namespace ga::cuda {

//===----------------------------------------------------------------------===//
// The CUDA driver (libcuda.so.1)
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;
using CUgraph = void *;
using CUgraphExec = void *;
/// CUgraphExecUpdateResultInfo.
struct GraphUpdateInfo {
  int result;
  void *errorNode, *errorFromNode;
};

#define GA_CUDA_DRIVER_FUNCTIONS(X)                                            \
  X(cuInit, true, CUresult (*)(unsigned))                                      \
  X(cuDeviceGetCount, true, CUresult (*)(int *))                               \
  X(cuDeviceGet, true, CUresult (*)(CUdevice *, int))                          \
  X(cuDeviceGetName, true, CUresult (*)(char *, int, CUdevice))                \
  X(cuDevicePrimaryCtxRetain, true, CUresult (*)(CUcontext *, CUdevice))       \
  X(cuCtxSetCurrent, true, CUresult (*)(CUcontext))                            \
  X(cuGetErrorString, true, CUresult (*)(CUresult, const char **))             \
  X(cuGetErrorName, true, CUresult (*)(CUresult, const char **))               \
  X(cuModuleLoadData, true, CUresult (*)(CUmodule *, const void *))            \
  X(cuModuleUnload, true, CUresult (*)(CUmodule))                              \
  X(cuModuleGetFunction, true,                                                 \
    CUresult (*)(CUfunction *, CUmodule, const char *))                        \
  X(cuLaunchKernel, true,                                                      \
    CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, \
                 unsigned, unsigned, CUstream, void **, void **))              \
  X(cuStreamCreate, true, CUresult (*)(CUstream *, unsigned))                  \
  X(cuStreamSynchronize, true, CUresult (*)(CUstream))                         \
  X(cuStreamWaitEvent, true, CUresult (*)(CUstream, CUevent, unsigned))        \
  X(cuEventCreate, true, CUresult (*)(CUevent *, unsigned))                    \
  X(cuEventRecord, true, CUresult (*)(CUevent, CUstream))                      \
  X(cuEventSynchronize, true, CUresult (*)(CUevent))                           \
  X(cuEventElapsedTime, true, CUresult (*)(float *, CUevent, CUevent))         \
  X(cuEventDestroy_v2, true, CUresult (*)(CUevent))                            \
  X(cuMemAlloc_v2, true, CUresult (*)(CUdeviceptr *, size_t))                  \
  X(cuMemFree_v2, true, CUresult (*)(CUdeviceptr))                             \
  X(cuMemAllocHost_v2, true, CUresult (*)(void **, size_t))                    \
  X(cuMemFreeHost, true, CUresult (*)(void *))                                 \
  X(cuMemcpyAsync, true,                                                       \
    CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))                  \
  X(cuMemsetD32Async, true,                                                    \
    CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream))                     \
  X(cuMemsetD16Async, true,                                                    \
    CUresult (*)(CUdeviceptr, unsigned short, size_t, CUstream))               \
  X(cuMemGetInfo_v2, true, CUresult (*)(size_t *, size_t *))
GA_SYMBOL_TABLE(DriverFunctions, GA_CUDA_DRIVER_FUNCTIONS)

/// Stream capture and graphs (GA_CUDA_GRAPH=1), looked up only then: a
/// driver without them turns the mode off.
#define GA_CUDA_GRAPH_FUNCTIONS(X)                                             \
  X(cuStreamBeginCapture_v2, true, CUresult (*)(CUstream, int))                \
  X(cuStreamEndCapture, true, CUresult (*)(CUstream, CUgraph *))               \
  X(cuGraphInstantiateWithFlags, true,                                         \
    CUresult (*)(CUgraphExec *, CUgraph, unsigned long long))                  \
  X(cuGraphExecUpdate_v2, true,                                                \
    CUresult (*)(CUgraphExec, CUgraph, GraphUpdateInfo *))                     \
  X(cuGraphLaunch, true, CUresult (*)(CUgraphExec, CUstream))                  \
  X(cuGraphDestroy, true, CUresult (*)(CUgraph))                               \
  X(cuGraphExecDestroy, true, CUresult (*)(CUgraphExec))
GA_SYMBOL_TABLE(GraphFunctions, GA_CUDA_GRAPH_FUNCTIONS)

//===----------------------------------------------------------------------===//
// cuBLAS (libcublas.so.13 or .12)
//===----------------------------------------------------------------------===//

/// cublasGemmEx and cublasGemmStridedBatchedEx take cudaDataType and
/// cublasComputeType_t as ints: the bf16 products of gpu-bf16. They and the
/// workspace are optional (checked by the first bf16 product; without a
/// workspace cuBLAS allocates its own), as are the pointer-array batches
/// (cublasSgemmBatched, cublasGemmBatchedEx; without them a two-level
/// batch is a strided batch per outer index).
#define GA_CUBLAS_FUNCTIONS(X)                                                 \
  X(cublasCreate_v2, true, int (*)(void **))                                   \
  X(cublasSetStream_v2, true, int (*)(void *, CUstream))                       \
  X(cublasSetMathMode, true, int (*)(void *, int))                             \
  X(cublasSgemm_v2, true,                                                      \
    int (*)(void *, int, int, int, int, int, const float *, const float *,     \
            int, const float *, int, const float *, float *, int))             \
  X(cublasSgemmStridedBatched, true,                                           \
    int (*)(void *, int, int, int, int, int, const float *, const float *,     \
            int, long long, const float *, int, long long, const float *,      \
            float *, int, long long, int))                                     \
  X(cublasGemmEx, false,                                                       \
    int (*)(void *, int, int, int, int, int, const void *, const void *, int,  \
            int, const void *, int, int, const void *, void *, int, int, int,  \
            int))                                                              \
  X(cublasGemmStridedBatchedEx, false,                                         \
    int (*)(void *, int, int, int, int, int, const void *, const void *, int,  \
            int, long long, const void *, int, int, long long, const void *,   \
            void *, int, int, long long, int, int, int))                       \
  X(cublasSgemmBatched, false,                                                 \
    int (*)(void *, int, int, int, int, int, const float *,                    \
            const float *const *, int, const float *const *, int,              \
            const float *, float *const *, int, int))                          \
  X(cublasGemmBatchedEx, false,                                                \
    int (*)(void *, int, int, int, int, int, const void *,                     \
            const void *const *, int, int, const void *const *, int, int,      \
            const void *, void *const *, int, int, int, int, int))             \
  X(cublasSetWorkspace_v2, false, int (*)(void *, void *, size_t))
GA_SYMBOL_TABLE(CublasFunctions, GA_CUBLAS_FUNCTIONS)

//===----------------------------------------------------------------------===//
// cuBLASLt (libcublasLt.so.13 or .12, or cuBLAS's own library)
//===----------------------------------------------------------------------===//

struct CublasLtAlgo {
  uint64_t data[8];
};
struct CublasLtHeuristic {
  CublasLtAlgo algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

#define GA_CUBLASLT_FUNCTIONS(X)                                               \
  X(cublasLtCreate, true, int (*)(void **))                                    \
  X(cublasLtMatmulDescCreate, true, int (*)(void **, int, int))                \
  X(cublasLtMatmulDescSetAttribute, true,                                      \
    int (*)(void *, int, const void *, size_t))                                \
  X(cublasLtMatmulDescDestroy, true, int (*)(void *))                          \
  X(cublasLtMatrixLayoutCreate, true,                                          \
    int (*)(void **, int, uint64_t, uint64_t, int64_t))                        \
  X(cublasLtMatrixLayoutDestroy, true, int (*)(void *))                        \
  X(cublasLtMatmulPreferenceCreate, true, int (*)(void **))                    \
  X(cublasLtMatmulPreferenceSetAttribute, true,                                \
    int (*)(void *, int, const void *, size_t))                                \
  X(cublasLtMatmulPreferenceDestroy, true, int (*)(void *))                    \
  X(cublasLtMatmulAlgoGetHeuristic, true,                                      \
    int (*)(void *, void *, void *, void *, void *, void *, void *, int,       \
            CublasLtHeuristic *, int *))                                       \
  X(cublasLtMatmul, true,                                                      \
    int (*)(void *, void *, const void *, const void *, void *, const void *,  \
            void *, const void *, const void *, void *, void *, void *,        \
            const CublasLtAlgo *, void *, size_t, CUstream))
GA_SYMBOL_TABLE(CublasLtFunctions, GA_CUBLASLT_FUNCTIONS)

//===----------------------------------------------------------------------===//
// NCCL (libnccl.so.2; nccl.h's ABI)
//===----------------------------------------------------------------------===//

using NcclComm = void *;
struct NcclUniqueId {
  char internal[128];
};

#define GA_NCCL_FUNCTIONS(X)                                                   \
  X(ncclGetUniqueId, true, int (*)(NcclUniqueId *))                            \
  X(ncclCommInitRank, true, int (*)(NcclComm *, int, NcclUniqueId, int))       \
  X(ncclAllReduce, true,                                                       \
    int (*)(const void *, void *, size_t, int, int, NcclComm, CUstream))       \
  X(ncclReduceScatter, true,                                                   \
    int (*)(const void *, void *, size_t, int, int, NcclComm, CUstream))       \
  X(ncclAllGather, true,                                                       \
    int (*)(const void *, void *, size_t, int, NcclComm, CUstream))            \
  X(ncclGetErrorString, true, const char *(*)(int))
GA_SYMBOL_TABLE(NcclFunctions, GA_NCCL_FUNCTIONS)

} // namespace ga::cuda
#pragma GCC visibility pop

#endif // GA_LIB_RUNTIME_CUDA_LIBRARIES_H
