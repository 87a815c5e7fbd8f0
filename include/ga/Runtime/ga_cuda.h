/*===- ga_cuda.h - The C ABI of a step compiled for CUDA ---------*- C -*-===*
 *
 * Part of ga-opt: exact gradient accumulation and data parallelism.
 *
 *===----------------------------------------------------------------------===*
 *
 * What a step library compiled with `ga-compile --target=cuda` calls in
 * libga_cuda_runtime.so (besides the mgpu* functions of MLIR's gpu-to-llvm
 * lowering), and what ga-gpu-emulate-on-host's program calls instead in
 * libga_runtime.so. A caller of a step library calls only the functions
 * marked "for callers"; the others are called by the compiled code.
 *
 * Matrices are float32, row-major, given as a pointer (intptr_t), an offset
 * and a leading dimension in elements. op(X) is X, or X transposed when
 * its trans flag is set: C is m x n, op(A) m x k, op(B) k x n. Precisions:
 * `_f32` (float32 products), `_f32_tf32` (TF32 tensor cores: gpu-tf32),
 * `_f32_bf16` (bfloat16 inputs, float32 products and sums: gpu-bf16),
 * `_f32_bf16in` (the same, A and B stored as bfloat16, their offsets and
 * leading dimensions in bfloat16 elements: precision=bf16-mixed).
 *
 *===----------------------------------------------------------------------===*/

#ifndef GA_RUNTIME_GA_CUDA_H
#define GA_RUNTIME_GA_CUDA_H

#include "ga/Runtime/ga_step.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===-- The entry and exit of a CUDA step library -------------------------===*/

/* ga_step_enter's checks, then the inputs copied to device buffers whose
 * pointers go to `device_inputs` (one per input). */
int32_t ga_cuda_step_enter(const char *signature, const void *const *inputs,
                           void *const *outputs, ga_status *status,
                           void **device_inputs);
/* Copies the results (memref descriptors on the device, as ga_step_leave's)
 * to `outputs`, frees the step's device buffers and reports the step's
 * first CUDA failure or runtime error. */
int32_t ga_cuda_step_leave(const char *signature, const int64_t *results,
                           void *const *device_inputs, void *const *outputs,
                           ga_status *status);

/*===-- For callers -------------------------------------------------------===*/

/* cuBLAS's workspace block, allocated once at the first GEMM and kept:
 * device memory a step with products holds beside its own buffers (the
 * planner counts it in a device budget). cuBLAS and cuBLASLt share all
 * but its last GA_CUDA_BLAS_POINTER_BYTES, which hold the arrays of
 * pointers of two-level batched products (ga_cuda_gemm_batched2). */
#define GA_CUDA_BLAS_WORKSPACE_BYTES ((size_t)32 << 20)
#define GA_CUDA_BLAS_POINTER_BYTES ((size_t)1 << 20)

/* The block the runtime's caching allocator gives an allocation of `bytes`
 * (at least 1): rounded up to 512 bytes, so that similar sizes share cached
 * blocks. The memory model of a device budget rounds with it too. */
static inline size_t ga_cuda_block_bytes(size_t bytes) {
  return ((bytes ? bytes : 1) + 511) / 512 * 512;
}

/* The name of the device steps run on, or NULL (with `*reason` set) when
 * there is none. */
const char *ga_cuda_device_name(const char **reason);
/* The step's own device buffers (not its inputs' copies or cuBLAS's
 * workspace), as ga_memory_stats counts the CPU allocator's. */
void ga_cuda_memory_stats(ga_memory *out);
/* Resets both peaks (the step's buffers' and the device's) to what is
 * held now. */
void ga_cuda_memory_reset_peak(void);
/* The device memory the runtime holds from the driver: the step's buffers,
 * the inputs' copies, the caching allocator's free blocks and cuBLAS's
 * workspace; `peak_bytes` is its high-water mark, the quantity a device
 * memory budget (memory-budget on target=cuda) bounds. The tools print it
 * as budget_peak_bytes beside step_peak_bytes. */
void ga_cuda_device_memory_stats(ga_memory *out);
/* Gives the cached free blocks back to the driver (after the stream is
 * done with them), as torch.cuda.empty_cache does; returns their bytes. */
size_t ga_cuda_empty_cache(void);
/* The first CUDA failure not yet reported by a step's exit, or NULL. */
const char *ga_cuda_last_error(void);
/* How the sums of a data-parallel step travel between ranks: "NCCL" or
 * "MPI through host memory"; NULL before the first all-reduce. */
const char *ga_cuda_collectives(void);
/* GA_CUDA_GRAPH=1: how many steps ran as one CUDA graph and, if the mode
 * turned off, why; NULL without it. */
const char *ga_cuda_graph_status(void);

/*===-- Device memory (ga-gpu-device-allocations) -------------------------===*/

void *ga_cuda_alloc(size_t size);
void *ga_cuda_aligned_alloc(size_t alignment, size_t size);
void ga_cuda_free(void *pointer);
/* Element `index` of the device buffer at `pointer` (the host waits). */
float ga_cuda_read_f32(intptr_t pointer, int64_t index);
double ga_cuda_read_f64(intptr_t pointer, int64_t index);
int32_t ga_cuda_read_i32(intptr_t pointer, int64_t index);
int64_t ga_cuda_read_i64(intptr_t pointer, int64_t index);

/*===-- host-offload (ga-gpu-offload-buffers) -----------------------------===*/

/* Copies `bytes` of the device buffer at `pointer` to pinned host memory on
 * the runtime's copy stream, after what the step's stream has enqueued so
 * far; the buffer may be freed at once (its block is reused only after the
 * copy). Returns the copy's handle (-1 on failure, recorded). */
int64_t ga_cuda_offload(intptr_t pointer, int64_t bytes);
/* Copies the host copy `handle` back into the device buffer at `pointer`
 * on the copy stream, after what the step's stream has enqueued so far. */
void ga_cuda_reload(int64_t handle, intptr_t pointer);
/* The step's stream waits for the copy back; the host copy is released. */
void ga_cuda_reload_wait(int64_t handle);
/* The same three for the CPU emulation of the device program (memcpy; the
 * device buffer is overwritten with 0xff bytes once copied, so that a read
 * of it after the offload shows as NaNs). */
int64_t ga_host_offload(intptr_t pointer, int64_t bytes);
void ga_host_reload(int64_t handle, intptr_t pointer);
void ga_host_reload_wait(int64_t handle);

/*===-- The fused attention (attention=library) ---------------------------===*/

/* train.attention and train.attention_grad of bfloat16 operands (causal or
 * not, without a key mask): each operand a ranked memref descriptor of a
 * device buffer (rank given before it), [B, S, H, D] operands and results,
 * [B, H, S] float32 statistics (lse). The CUDA runtime's run on cuDNN's
 * fused SDPA (libga_cudnn_attention.so); ga_host_attention_* (the CPU
 * runtime's reference, libga_runtime.so) are the emulation's. */
void ga_cuda_attention_fwd_bf16(int64_t qr, void *q, int64_t kr, void *k,
                                int64_t vr, void *v, int64_t orr, void *o,
                                int64_t lr, void *l, double scale,
                                int32_t causal, double masked_score);
void ga_cuda_attention_bwd_bf16(int64_t qr, void *q, int64_t kr, void *k,
                                int64_t vr, void *v, int64_t orr, void *o,
                                int64_t lr, void *l, int64_t gr, void *g,
                                int64_t dqr, void *dq, int64_t dkr, void *dk,
                                int64_t dvr, void *dv, double scale,
                                int32_t causal, double masked_score);
void ga_host_attention_fwd_bf16(int64_t qr, void *q, int64_t kr, void *k,
                                int64_t vr, void *v, int64_t orr, void *o,
                                int64_t lr, void *l, double scale,
                                int32_t causal, double masked_score);
void ga_host_attention_bwd_bf16(int64_t qr, void *q, int64_t kr, void *k,
                                int64_t vr, void *v, int64_t orr, void *o,
                                int64_t lr, void *l, int64_t gr, void *g,
                                int64_t dqr, void *dq, int64_t dkr, void *dk,
                                int64_t dvr, void *dv, double scale,
                                int32_t causal, double masked_score);

/*===-- train.all_reduce of a device buffer -------------------------------===*/

/* `descriptor` is a ranked memref descriptor of rank `rank` (on the host);
 * `kind` 0 is a sum, 1 an average. */
void ga_cuda_all_reduce_f32(int64_t rank, void *descriptor, int32_t kind);
void ga_cuda_all_reduce_f64(int64_t rank, void *descriptor, int32_t kind);
void ga_cuda_all_reduce_i32(int64_t rank, void *descriptor, int32_t kind);
void ga_cuda_all_reduce_i64(int64_t rank, void *descriptor, int32_t kind);

/* train.reduce_scatter and train.all_gather of device buffers (contiguous
 * vectors; `in` of r times out's elements for a reduce-scatter, `out` of r
 * times in's for an all-gather); NCCL where the all-reduce uses it,
 * otherwise staged through host memory for MPI. */
#define GA_CUDA_PARTITIONS(T)                                                  \
  void ga_cuda_reduce_scatter_##T(int64_t inRank, void *in, int64_t outRank,   \
                                  void *out, int32_t kind);                    \
  void ga_cuda_all_gather_##T(int64_t inRank, void *in, int64_t outRank,       \
                              void *out);                                      \
  int64_t ga_cuda_all_gather_start_##T(int64_t inRank, void *in,               \
                                       int64_t outRank, void *out);
GA_CUDA_PARTITIONS(f32)
GA_CUDA_PARTITIONS(f64)
GA_CUDA_PARTITIONS(i32)
GA_CUDA_PARTITIONS(i64)
#undef GA_CUDA_PARTITIONS
/* Every NCCL operation runs on the collective stream, in the order the
 * host issues them, after what the step's stream has enqueued so far; the
 * step's stream waits for it at once, except for a prefetched all-gather
 * (ga-gpu-prefetch-gathers): _start enqueues it and returns a handle (-1
 * where it ran in full at once: one rank, the host path), _wait makes the
 * step's stream wait for it before the gathered buffer's reader. */
void ga_cuda_all_gather_wait(int64_t handle);

/*===-- GEMMs (ga-gpu-gemm-to-blas) ---------------------------------------===*/

/* The GEMMs of one precision, in libga_cuda_runtime (PREFIX ga_cuda_) and,
 * computed on the CPU as the step's loops would, in libga_runtime (PREFIX
 * ga_host_):
 *
 * - gemm: C += op(A) op(B), or C = op(A) op(B) without `accumulate` (C is
 *   not read).
 * - gemm_batched: `count` such products scaled by `alpha`, each operand's
 *   i-th matrix `stride` elements after the previous (the attention's
 *   contractions per head); `order` says how the step multiplied by alpha
 *   (0: x * y, 1: (x * y) * alpha, 2: (x * alpha) * y, 3: (y * alpha) * x;
 *   the emulation follows it, cuBLAS scales the sum).
 * - gemm_batched2: `outer` x `count` such products, the (o, i)-th matrix
 *   of each operand o `outerStride` + i `stride` elements after the first
 *   (the attention's products over the heads of every sequence, whose
 *   matrices no single stride reaches); one cuBLAS call on arrays of
 *   pointers.
 * - gemm_bias: D = op(A) op(B) + bias, the bias (n elements) added to every
 *   row of D (m x n, leading dimension ldd); D is not read.
 *
 * With bfloat16 operands (_bf16in), two more write a bfloat16 D
 * (precision=bf16's per-example products): gemm_bf16, D = bf16(op(A)
 * op(B)), and gemm_bias_bf16, D = bf16(op(A) op(B) + bias) with a bfloat16
 * bias; the sum in float32, rounded once to nearest even. */
/* The parameters of each kind, spelled once (the definitions use them). */
#define GA_GEMM_PARAMS                                                         \
  int32_t transA, int32_t transB, int32_t accumulate, int64_t m, int64_t n,    \
      int64_t k, intptr_t a, int64_t offsetA, int64_t lda, intptr_t b,         \
      int64_t offsetB, int64_t ldb, intptr_t c, int64_t offsetC, int64_t ldc
#define GA_GEMM_BATCHED_PARAMS                                                 \
  int32_t transA, int32_t transB, int32_t accumulate, int64_t m, int64_t n,    \
      int64_t k, int64_t count, float alpha, int32_t order, intptr_t a,        \
      int64_t offsetA, int64_t lda, int64_t strideA, intptr_t b,               \
      int64_t offsetB, int64_t ldb, int64_t strideB, intptr_t c,               \
      int64_t offsetC, int64_t ldc, int64_t strideC
#define GA_GEMM_BATCHED2_PARAMS                                                \
  int32_t transA, int32_t transB, int32_t accumulate, int64_t m, int64_t n,    \
      int64_t k, int64_t outer, int64_t count, float alpha, int32_t order,     \
      intptr_t a, int64_t offsetA, int64_t lda, int64_t outerStrideA,          \
      int64_t strideA, intptr_t b, int64_t offsetB, int64_t ldb,               \
      int64_t outerStrideB, int64_t strideB, intptr_t c, int64_t offsetC,      \
      int64_t ldc, int64_t outerStrideC, int64_t strideC
#define GA_GEMM_BIAS_PARAMS                                                    \
  int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k, intptr_t a, \
      int64_t offsetA, int64_t lda, intptr_t b, int64_t offsetB, int64_t ldb,  \
      intptr_t bias, int64_t offsetBias, intptr_t d, int64_t offsetD,          \
      int64_t ldd

#define GA_GEMM_ROUNDED_PARAMS                                                 \
  int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k, intptr_t a, \
      int64_t offsetA, int64_t lda, intptr_t b, int64_t offsetB, int64_t ldb,  \
      intptr_t d, int64_t offsetD, int64_t ldd

#define GA_CUDA_DECLARE_GEMMS(PREFIX, SUFFIX)                                  \
  void PREFIX##gemm_f32##SUFFIX(GA_GEMM_PARAMS);                               \
  void PREFIX##gemm_batched_f32##SUFFIX(GA_GEMM_BATCHED_PARAMS);               \
  void PREFIX##gemm_batched2_f32##SUFFIX(GA_GEMM_BATCHED2_PARAMS);             \
  void PREFIX##gemm_bias_f32##SUFFIX(GA_GEMM_BIAS_PARAMS);

GA_CUDA_DECLARE_GEMMS(ga_cuda_, )
GA_CUDA_DECLARE_GEMMS(ga_cuda_, _tf32)
GA_CUDA_DECLARE_GEMMS(ga_cuda_, _bf16)
GA_CUDA_DECLARE_GEMMS(ga_cuda_, _bf16in)
GA_CUDA_DECLARE_GEMMS(ga_host_, )
GA_CUDA_DECLARE_GEMMS(ga_host_, _tf32)
GA_CUDA_DECLARE_GEMMS(ga_host_, _bf16)
GA_CUDA_DECLARE_GEMMS(ga_host_, _bf16in)
#undef GA_CUDA_DECLARE_GEMMS
void ga_cuda_gemm_bf16_bf16in(GA_GEMM_ROUNDED_PARAMS);
void ga_cuda_gemm_bias_bf16_bf16in(GA_GEMM_BIAS_PARAMS);
void ga_host_gemm_bf16_bf16in(GA_GEMM_ROUNDED_PARAMS);
void ga_host_gemm_bias_bf16_bf16in(GA_GEMM_BIAS_PARAMS);

/* ga-gpu-emulate-on-host's reads of one element (libga_runtime). */
float ga_host_read_f32(intptr_t pointer, int64_t index);
double ga_host_read_f64(intptr_t pointer, int64_t index);
int32_t ga_host_read_i32(intptr_t pointer, int64_t index);
int64_t ga_host_read_i64(intptr_t pointer, int64_t index);

#ifdef __cplusplus
}
#endif

#endif /* GA_RUNTIME_GA_CUDA_H */
