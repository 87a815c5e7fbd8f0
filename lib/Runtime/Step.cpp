//===- Step.cpp - The entry and exit of a compiled step -------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga_step_enter and ga_step_leave, which a step library's ga_step_run calls
// around the compiled code (and ga-run around the JIT-compiled code), and
// memrefCopy, which bufferized code calls for strided copies. Standard C++
// only.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Errors.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_step.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

extern "C" void _mlir_memref_to_llvm_free(void *pointer);

namespace {

using ga::setStatus;

/// The parsed signature of `text`, parsed once per text (a step library's
/// text lives as long as the library).
const ga::StepSignature *signatureOf(const char *text, ga_status *status) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ga::StepSignature>> cache;
  if (!text) {
    setStatus(status, GA_ERROR_SIGNATURE, "the step has no signature");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto &entry = cache[text];
  if (!entry) {
    auto parsed = std::make_unique<ga::StepSignature>();
    std::string error;
    if (!ga::parseSignature(text, *parsed, error)) {
      cache.erase(text);
      setStatus(status, GA_ERROR_SIGNATURE, error);
      return nullptr;
    }
    entry = std::move(parsed);
  }
  return entry.get();
}

} // namespace

extern "C" int32_t ga_step_enter(const char *signature,
                                 const void *const *inputs,
                                 void *const *outputs, ga_status *status) {
  if (status)
    *status = ga_status{};
  const ga::StepSignature *sig = signatureOf(signature, status);
  if (!sig)
    return GA_ERROR_SIGNATURE;
  if (ga_world_size() != sig->ranks)
    return setStatus(
        status, GA_ERROR_WORLD_SIZE,
        "@" + sig->entry + " runs on " + std::to_string(sig->ranks) +
            " data-parallel rank(s), but this process is in a world of " +
            std::to_string(ga_world_size()) +
            (sig->ranks > 1 ? ": launch it with `mpirun -np " +
                                  std::to_string(sig->ranks) + " ...`"
                            : ": run it without mpirun"));
  for (size_t i = 0; i < sig->inputs.size(); ++i)
    if (!inputs || !inputs[i])
      return setStatus(status, GA_ERROR_INVALID_ARGUMENT,
                       "@" + sig->entry + ": input #" + std::to_string(i) +
                           " is a null pointer");
  for (size_t i = 0; i < sig->results.size(); ++i)
    if (!outputs || !outputs[i])
      return setStatus(status, GA_ERROR_INVALID_ARGUMENT,
                       "@" + sig->entry + ": output #" + std::to_string(i) +
                           " is a null pointer");
  // An error left by an earlier step is not this step's.
  ga_error stale;
  ga_take_error(&stale);
  return GA_OK;
}

extern "C" int32_t ga_step_leave(const char *signature, const int64_t *results,
                                 const void *const *inputs,
                                 void *const *outputs, ga_status *status) {
  if (status)
    *status = ga_status{};
  const ga::StepSignature *sig = signatureOf(signature, status);
  if (!sig)
    return GA_ERROR_SIGNATURE;
  // Copy every result before freeing any: results can share a buffer.
  std::vector<int64_t> allocated;
  size_t offset = 0;
  for (size_t i = 0; i < sig->results.size(); ++i) {
    const ga::TensorSpec &spec = sig->results[i];
    int64_t rank = spec.shape.size();
    const int64_t *fields = results + offset;
    offset += 3 + 2 * rank;
    std::vector<int64_t> contiguous(rank);
    for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
      contiguous[d] = stride;
      stride *= spec.shape[d];
    }
    ga::copyStrided(static_cast<char *>(outputs[i]), 0, contiguous.data(),
                    reinterpret_cast<const char *>(fields[1]), fields[2],
                    fields + 3 + rank, fields + 3, rank,
                    ga::npyDTypeSize(spec.dtype));
    allocated.push_back(fields[0]);
  }
  std::vector<int64_t> freed;
  for (int64_t pointer : allocated) {
    bool isInput = false;
    for (size_t j = 0; j < sig->inputs.size(); ++j)
      isInput |= reinterpret_cast<int64_t>(inputs[j]) == pointer;
    // 0xdeadbeef marks a descriptor of a global constant.
    bool seen = false;
    for (int64_t f : freed)
      seen |= f == pointer;
    if (!pointer || pointer == 0xdeadbeef || isInput || seen)
      continue;
    freed.push_back(pointer);
    // The step allocated it with the runtime's allocator (Memory.cpp).
    _mlir_memref_to_llvm_free(reinterpret_cast<void *>(pointer));
  }
  ga_error error;
  if (ga_take_error(&error) == GA_OK)
    return GA_OK;
  std::string where;
  if (error.argument >= 0 && error.argument < (int64_t)sig->inputs.size())
    where = ga::multiIndex(sig->inputs[error.argument].shape, error.position);
  return setStatus(status, error.code, ga::describeError(error, where));
}

namespace {
/// MLIR's unranked memref: the rank and a pointer to a ranked descriptor.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};
} // namespace

/// Copies `src` into `dst` (same rank and sizes, any strides): the function
/// that MLIR's lowering of memref.copy calls for non-contiguous buffers.
extern "C" void memrefCopy(int64_t elemSize, UnrankedMemRef *src,
                           UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  auto *s = static_cast<const int64_t *>(src->descriptor);
  auto *d = static_cast<const int64_t *>(dst->descriptor);
  ga::copyStrided(reinterpret_cast<char *>(d[1]), d[2], d + 3 + rank,
                  reinterpret_cast<const char *>(s[1]), s[2], s + 3 + rank,
                  s + 3, rank, elemSize);
}

/// The host reads of ga-gpu-emulate-on-host (the CUDA target's device
/// program run on the CPU): element `index` of the buffer at `pointer`.
extern "C" float ga_host_read_f32(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const float *>(pointer)[index];
}
extern "C" double ga_host_read_f64(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const double *>(pointer)[index];
}
extern "C" int32_t ga_host_read_i32(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const int32_t *>(pointer)[index];
}
extern "C" int64_t ga_host_read_i64(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const int64_t *>(pointer)[index];
}

/// `x` rounded to the nearest bfloat16 (ties to even), as float: what
/// cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF makes of a float32 input.
static float roundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u) // inf and NaN: keep (quiet NaN)
    bits = (bits & 0x007fffffu) ? (bits | 0x00400000u) & 0xffff0000u
                                : bits & 0xffff0000u;
  else
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

/// The device program's batched GEMM on the CPU (gpu-emulate=true):
/// `count` products, each operand's i-th matrix `stride` elements after the
/// previous, each element's terms multiplied in the step's `order` (x * y,
/// (x * y) * alpha, (x * alpha) * y, (y * alpha) * x, with x from A and y
/// from B) and added in k order to C (to zero without `accumulate`: C is
/// not read), as the step's loops do; with `bf16`,
/// x and y rounded to bfloat16 first (gpu-bf16).
static void hostGemm(bool bf16, int32_t transA, int32_t transB,
                     int32_t accumulate, int64_t m, int64_t n, int64_t k,
                     int64_t count, float alpha, int32_t order, intptr_t a,
                     int64_t offsetA, int64_t lda, int64_t strideA, intptr_t b,
                     int64_t offsetB, int64_t ldb, int64_t strideB, intptr_t c,
                     int64_t offsetC, int64_t ldc, int64_t strideC) {
  for (int64_t batch = 0; batch < count; ++batch) {
    const float *A =
        reinterpret_cast<const float *>(a) + offsetA + batch * strideA;
    const float *B =
        reinterpret_cast<const float *>(b) + offsetB + batch * strideB;
    float *C = reinterpret_cast<float *>(c) + offsetC + batch * strideC;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = accumulate ? C[i * ldc + j] : 0.0f;
        for (int64_t p = 0; p < k; ++p) {
          float x = transA ? A[p * lda + i] : A[i * lda + p];
          float y = transB ? B[j * ldb + p] : B[p * ldb + j];
          if (bf16) {
            x = roundToBf16(x);
            y = roundToBf16(y);
          }
          float term = order == 1   ? (x * y) * alpha
                       : order == 2 ? (x * alpha) * y
                       : order == 3 ? (y * alpha) * x
                                    : x * y;
          sum += term;
        }
        C[i * ldc + j] = sum;
      }
  }
}

/// The batched GEMM of ga-gpu-emulate-on-host (see hostGemm).
extern "C" void ga_host_gemm_batched_f32(
    int32_t transA, int32_t transB, int32_t accumulate, int64_t m, int64_t n,
    int64_t k, int64_t count, float alpha, int32_t order, intptr_t a,
    int64_t offsetA, int64_t lda, int64_t strideA, intptr_t b, int64_t offsetB,
    int64_t ldb, int64_t strideB, intptr_t c, int64_t offsetC, int64_t ldc,
    int64_t strideC) {
  hostGemm(false, transA, transB, accumulate, m, n, k, count, alpha, order, a,
           offsetA, lda, strideA, b, offsetB, ldb, strideB, c, offsetC, ldc,
           strideC);
}

/// The emulated batched bf16 GEMM: inputs rounded to bfloat16, products
/// and sums in float32 (gpu-bf16).
extern "C" void ga_host_gemm_batched_f32_bf16(
    int32_t transA, int32_t transB, int32_t accumulate, int64_t m, int64_t n,
    int64_t k, int64_t count, float alpha, int32_t order, intptr_t a,
    int64_t offsetA, int64_t lda, int64_t strideA, intptr_t b, int64_t offsetB,
    int64_t ldb, int64_t strideB, intptr_t c, int64_t offsetC, int64_t ldc,
    int64_t strideC) {
  hostGemm(true, transA, transB, accumulate, m, n, k, count, alpha, order, a,
           offsetA, lda, strideA, b, offsetB, ldb, strideB, c, offsetC, ldc,
           strideC);
}

/// The emulated bf16 GEMM (see ga_host_gemm_batched_f32_bf16).
extern "C" void ga_host_gemm_f32_bf16(int32_t transA, int32_t transB,
                                      int32_t accumulate, int64_t m, int64_t n,
                                      int64_t k, intptr_t a, int64_t offsetA,
                                      int64_t lda, intptr_t b, int64_t offsetB,
                                      int64_t ldb, intptr_t c, int64_t offsetC,
                                      int64_t ldc) {
  hostGemm(true, transA, transB, accumulate, m, n, k, 1, 1.0f, 0, a, offsetA,
           lda, 0, b, offsetB, ldb, 0, c, offsetC, ldc, 0);
}

/// The host GEMM of ga-gpu-emulate-on-host, as ga_cuda_gemm_f32 computes it
/// (C += op(A) op(B), row-major, offsets and leading dimensions in
/// elements), each element summed over k in order.
extern "C" void ga_host_gemm_f32(int32_t transA, int32_t transB,
                                 int32_t accumulate, int64_t m, int64_t n,
                                 int64_t k, intptr_t a, int64_t offsetA,
                                 int64_t lda, intptr_t b, int64_t offsetB,
                                 int64_t ldb, intptr_t c, int64_t offsetC,
                                 int64_t ldc) {
  ga_host_gemm_batched_f32(transA, transB, accumulate, m, n, k, 1, 1.0f, 0, a,
                           offsetA, lda, 0, b, offsetB, ldb, 0, c, offsetC, ldc,
                           0);
}

/// The emulated batched TF32 GEMM: float32, as ga_host_gemm_batched_f32.
extern "C" void ga_host_gemm_batched_f32_tf32(
    int32_t transA, int32_t transB, int32_t accumulate, int64_t m, int64_t n,
    int64_t k, int64_t count, float alpha, int32_t order, intptr_t a,
    int64_t offsetA, int64_t lda, int64_t strideA, intptr_t b, int64_t offsetB,
    int64_t ldb, int64_t strideB, intptr_t c, int64_t offsetC, int64_t ldc,
    int64_t strideC) {
  ga_host_gemm_batched_f32(transA, transB, accumulate, m, n, k, count, alpha,
                           order, a, offsetA, lda, strideA, b, offsetB, ldb,
                           strideB, c, offsetC, ldc, strideC);
}

/// The device program's bias GEMM on the CPU (gpu-emulate=true): D = op(A)
/// op(B) + bias, the product from zero (hostGemm without accumulate), as
/// the step's matmul into a zero-filled buffer does, then each element
/// added to the bias of its column, as the step's addition did.
static void hostGemmBias(bool bf16, int32_t transA, int32_t transB, int64_t m,
                         int64_t n, int64_t k, intptr_t a, int64_t offsetA,
                         int64_t lda, intptr_t b, int64_t offsetB, int64_t ldb,
                         intptr_t bias, int64_t offsetBias, intptr_t d,
                         int64_t offsetD, int64_t ldd) {
  hostGemm(bf16, transA, transB, /*accumulate=*/0, m, n, k, 1, 1.0f, 0, a,
           offsetA, lda, 0, b, offsetB, ldb, 0, d, offsetD, ldd, 0);
  const float *Bias = reinterpret_cast<const float *>(bias) + offsetBias;
  float *D = reinterpret_cast<float *>(d) + offsetD;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      D[i * ldd + j] += Bias[j];
}

/// The emulated ga_cuda_gemm_bias_f32 (see hostGemmBias).
extern "C" void ga_host_gemm_bias_f32(int32_t transA, int32_t transB, int64_t m,
                                      int64_t n, int64_t k, intptr_t a,
                                      int64_t offsetA, int64_t lda, intptr_t b,
                                      int64_t offsetB, int64_t ldb,
                                      intptr_t bias, int64_t offsetBias,
                                      intptr_t d, int64_t offsetD,
                                      int64_t ldd) {
  hostGemmBias(false, transA, transB, m, n, k, a, offsetA, lda, b, offsetB, ldb,
               bias, offsetBias, d, offsetD, ldd);
}

/// The emulated TF32 bias GEMM: computed in float32.
extern "C" void
ga_host_gemm_bias_f32_tf32(int32_t transA, int32_t transB, int64_t m, int64_t n,
                           int64_t k, intptr_t a, int64_t offsetA, int64_t lda,
                           intptr_t b, int64_t offsetB, int64_t ldb,
                           intptr_t bias, int64_t offsetBias, intptr_t d,
                           int64_t offsetD, int64_t ldd) {
  hostGemmBias(false, transA, transB, m, n, k, a, offsetA, lda, b, offsetB, ldb,
               bias, offsetBias, d, offsetD, ldd);
}

/// The emulated bf16 bias GEMM: inputs rounded to bfloat16.
extern "C" void
ga_host_gemm_bias_f32_bf16(int32_t transA, int32_t transB, int64_t m, int64_t n,
                           int64_t k, intptr_t a, int64_t offsetA, int64_t lda,
                           intptr_t b, int64_t offsetB, int64_t ldb,
                           intptr_t bias, int64_t offsetBias, intptr_t d,
                           int64_t offsetD, int64_t ldd) {
  hostGemmBias(true, transA, transB, m, n, k, a, offsetA, lda, b, offsetB, ldb,
               bias, offsetBias, d, offsetD, ldd);
}

/// The emulated TF32 GEMM: computed in float32 (the CPU has no TF32).
extern "C" void ga_host_gemm_f32_tf32(int32_t transA, int32_t transB,
                                      int32_t accumulate, int64_t m, int64_t n,
                                      int64_t k, intptr_t a, int64_t offsetA,
                                      int64_t lda, intptr_t b, int64_t offsetB,
                                      int64_t ldb, intptr_t c, int64_t offsetC,
                                      int64_t ldc) {
  ga_host_gemm_f32(transA, transB, accumulate, m, n, k, a, offsetA, lda, b,
                   offsetB, ldb, c, offsetC, ldc);
}
