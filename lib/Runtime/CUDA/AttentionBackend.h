//===- AttentionBackend.h - The fused attention's library, as a C ABI -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// libga_cuda_runtime's fused attention (ga_cuda_attention_fwd_bf16 and
// ga_cuda_attention_bwd_bf16, Attention.cpp) calls a backend library that
// it loads with dlopen on the first attention: libga_cudnn_attention.so
// beside it (cuDNN's fused SDPA through cudnn-frontend, Cudnn.cpp), or the
// one GA_CUDA_ATTENTION_LIBRARY names (the driver stand-in's, in tests).
// The backend sees device pointers with sizes and strides, the step's
// stream and the runtime's allocator: no MLIR descriptor, no CUDA type.
// Plain C, so that the two sides may be built by different compilers.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_RUNTIME_CUDA_ATTENTIONBACKEND_H
#define GA_LIB_RUNTIME_CUDA_ATTENTIONBACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The ABI's version; a backend refuses a call of another.
#define GA_ATTENTION_BACKEND_VERSION 1

/// A tensor on the device: [B, S, H, D] (batch, position, head, feature)
/// for the operands and results, [B, H, S, 1] for the statistics; sizes and
/// strides in elements.
typedef struct GaAttentionTensor {
  void *data;
  int64_t sizes[4];
  int64_t strides[4];
} GaAttentionTensor;

/// One call. The forward pass reads q, k, v and writes out and lse; the
/// backward pass reads q, k, v, out, lse and dout and writes dq, dk, dv.
/// Operands and results are bfloat16, lse float32.
typedef struct GaAttentionCall {
  int32_t version;
  GaAttentionTensor q, k, v, out, lse, dout, dq, dk, dv;
  double scale;
  int32_t causal;
  /// The step's stream (a CUstream, which is a cudaStream_t).
  void *stream;
  /// The runtime's stream-ordered allocator, for the backend's workspace:
  /// a block freed after its last use on `stream` is reused only after it.
  uint64_t (*allocate)(void *context, size_t bytes);
  void (*release)(void *context, uint64_t pointer);
  void *allocatorContext;
} GaAttentionCall;

/// Enqueues the pass on the call's stream; 0 on success, else writes the
/// reason (naming the library's version and the GPU where they matter) to
/// `error` (`errorBytes` with its terminator) and returns nonzero.
typedef int (*GaAttentionPass)(const GaAttentionCall *call, char *error,
                               size_t errorBytes);

/// The backend's entry points, by these names.
int ga_attention_backend_forward(const GaAttentionCall *call, char *error,
                                 size_t errorBytes);
int ga_attention_backend_backward(const GaAttentionCall *call, char *error,
                                  size_t errorBytes);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // GA_LIB_RUNTIME_CUDA_ATTENTIONBACKEND_H
