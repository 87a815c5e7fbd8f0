//===- EmulateOnHost.cpp - The CUDA step's runtime calls, on the CPU ------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga-gpu-emulate-on-host runs the CUDA target's device program on the CPU,
// so that its arithmetic is checked without a GPU; its calls into the CUDA
// runtime become these (declared in ga/Runtime/ga_cuda.h): reads of one
// element, and the GEMMs computed as the step's own loops would compute
// them (each element's terms multiplied in the step's order and summed over
// k in order; bf16 inputs rounded to bfloat16 as cuBLAS's
// CUBLAS_COMPUTE_32F_FAST_16BF rounds them; TF32 as float32, which the CPU
// has no tensor cores for). Standard C++ only.
//
//===----------------------------------------------------------------------===//

#include "Bfloat16.h"
#include "ga/Runtime/ga_cuda.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace {

// What cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF makes of a float32 input,
// and how bfloat16 operands and results are stored.
using ga::runtime::bf16ToFloat;
using ga::runtime::floatToBf16;
using ga::runtime::roundToBf16;

/// How a GEMM reads its operands: float32 as stored, float32 rounded to
/// bfloat16 (gpu-bf16), or stored as bfloat16 (precision=bf16-mixed).
enum class Operands { F32, RoundedF32, StoredBF16 };

/// Element `index` of an operand at `base` (offsets in its own elements),
/// as a float.
float operand(Operands kind, intptr_t base, int64_t index) {
  if (kind == Operands::StoredBF16)
    return bf16ToFloat(reinterpret_cast<const uint16_t *>(base)[index]);
  float x = reinterpret_cast<const float *>(base)[index];
  return kind == Operands::RoundedF32 ? roundToBf16(x) : x;
}

/// The device program's batched GEMM on the CPU (gpu-emulate=true):
/// `count` products, each operand's i-th matrix `stride` elements after the
/// previous, each element's terms multiplied in the step's `order` (x * y,
/// (x * y) * alpha, (x * alpha) * y, (y * alpha) * x, with x from A and y
/// from B) and added in k order to C (to zero without `accumulate`: C is
/// not read), as the step's loops do; x and y read as `kind` says.
void hostGemm(Operands kind, int32_t transA, int32_t transB, int32_t accumulate,
              int64_t m, int64_t n, int64_t k, int64_t count, float alpha,
              int32_t order, intptr_t a, int64_t offsetA, int64_t lda,
              int64_t strideA, intptr_t b, int64_t offsetB, int64_t ldb,
              int64_t strideB, intptr_t c, int64_t offsetC, int64_t ldc,
              int64_t strideC) {
  for (int64_t batch = 0; batch < count; ++batch) {
    int64_t atA = offsetA + batch * strideA, atB = offsetB + batch * strideB;
    float *C = reinterpret_cast<float *>(c) + offsetC + batch * strideC;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = accumulate ? C[i * ldc + j] : 0.0f;
        for (int64_t p = 0; p < k; ++p) {
          float x =
              operand(kind, a, atA + (transA ? p * lda + i : i * lda + p));
          float y =
              operand(kind, b, atB + (transB ? j * ldb + p : p * ldb + j));
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

/// The device program's bias GEMM on the CPU (gpu-emulate=true): D = op(A)
/// op(B) + bias, the product from zero (hostGemm without accumulate), as
/// the step's matmul into a zero-filled buffer does, then each element
/// added to the bias of its column, as the step's addition did.
void hostGemmBias(Operands kind, int32_t transA, int32_t transB, int64_t m,
                  int64_t n, int64_t k, intptr_t a, int64_t offsetA,
                  int64_t lda, intptr_t b, int64_t offsetB, int64_t ldb,
                  intptr_t bias, int64_t offsetBias, intptr_t d,
                  int64_t offsetD, int64_t ldd) {
  hostGemm(kind, transA, transB, /*accumulate=*/0, m, n, k, 1, 1.0f, 0, a,
           offsetA, lda, 0, b, offsetB, ldb, 0, d, offsetD, ldd, 0);
  const float *Bias = reinterpret_cast<const float *>(bias) + offsetBias;
  float *D = reinterpret_cast<float *>(d) + offsetD;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      D[i * ldd + j] += Bias[j];
}

/// The bfloat16-writing GEMMs on the CPU (gpu-emulate=true): the float32
/// product from zero (hostGemm), plus the bias (stored as bfloat16) where
/// there is one, as the step's addition did, then each element rounded to
/// bfloat16 into D, as the step's rounding did.
void hostGemmRounded(int32_t transA, int32_t transB, int64_t m, int64_t n,
                     int64_t k, intptr_t a, int64_t offsetA, int64_t lda,
                     intptr_t b, int64_t offsetB, int64_t ldb, intptr_t bias,
                     int64_t offsetBias, intptr_t d, int64_t offsetD,
                     int64_t ldd) {
  std::vector<float> sums(static_cast<size_t>(m * n));
  hostGemm(Operands::StoredBF16, transA, transB, /*accumulate=*/0, m, n, k, 1,
           1.0f, 0, a, offsetA, lda, 0, b, offsetB, ldb, 0,
           reinterpret_cast<intptr_t>(sums.data()), 0, n, 0);
  auto *D = reinterpret_cast<uint16_t *>(d) + offsetD;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float x = sums[i * n + j];
      if (bias)
        x += operand(Operands::StoredBF16, bias, offsetBias + j);
      D[i * ldd + j] = floatToBf16(x);
    }
}

} // namespace

extern "C" {

/// The host reads of ga-gpu-emulate-on-host (the CUDA target's device
/// program run on the CPU): element `index` of the buffer at `pointer`.
float ga_host_read_f32(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const float *>(pointer)[index];
}
double ga_host_read_f64(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const double *>(pointer)[index];
}
int32_t ga_host_read_i32(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const int32_t *>(pointer)[index];
}
int64_t ga_host_read_i64(intptr_t pointer, int64_t index) {
  return reinterpret_cast<const int64_t *>(pointer)[index];
}

/// host-offload in the emulation: the host copies by handle.
static std::mutex hostCopiesMutex;
static std::vector<std::vector<unsigned char>> hostCopies;

int64_t ga_host_offload(intptr_t pointer, int64_t bytes) {
  std::lock_guard<std::mutex> lock(hostCopiesMutex);
  auto *data = reinterpret_cast<unsigned char *>(pointer);
  hostCopies.emplace_back(data, data + bytes);
  // Whatever reads the buffer after this reads NaNs.
  std::memset(data, 0xff, static_cast<size_t>(bytes));
  return static_cast<int64_t>(hostCopies.size()) - 1;
}

void ga_host_reload(int64_t handle, intptr_t pointer) {
  std::lock_guard<std::mutex> lock(hostCopiesMutex);
  std::vector<unsigned char> &copy = hostCopies.at(handle);
  std::memcpy(reinterpret_cast<void *>(pointer), copy.data(), copy.size());
}

void ga_host_reload_wait(int64_t handle) {
  std::lock_guard<std::mutex> lock(hostCopiesMutex);
  std::vector<unsigned char>().swap(hostCopies.at(handle));
  // Handles restart once every copy is back (one step's worth).
  while (!hostCopies.empty() && hostCopies.back().empty())
    hostCopies.pop_back();
}

// The GEMMs of one precision (see ga_cuda.h): `KIND` is how the operands
// are read.
#define GA_HOST_GEMM_ENTRY_POINTS(SUFFIX, KIND)                                \
  void ga_host_gemm_f32##SUFFIX(GA_GEMM_PARAMS) {                              \
    hostGemm(KIND, transA, transB, accumulate, m, n, k, 1, 1.0f, 0, a,         \
             offsetA, lda, 0, b, offsetB, ldb, 0, c, offsetC, ldc, 0);         \
  }                                                                            \
  void ga_host_gemm_batched_f32##SUFFIX(GA_GEMM_BATCHED_PARAMS) {              \
    hostGemm(KIND, transA, transB, accumulate, m, n, k, count, alpha, order,   \
             a, offsetA, lda, strideA, b, offsetB, ldb, strideB, c, offsetC,   \
             ldc, strideC);                                                    \
  }                                                                            \
  void ga_host_gemm_batched2_f32##SUFFIX(GA_GEMM_BATCHED2_PARAMS) {            \
    for (int64_t o = 0; o < outer; ++o)                                        \
      hostGemm(KIND, transA, transB, accumulate, m, n, k, count, alpha, order, \
               a, offsetA + o * outerStrideA, lda, strideA, b,                 \
               offsetB + o * outerStrideB, ldb, strideB, c,                    \
               offsetC + o * outerStrideC, ldc, strideC);                      \
  }                                                                            \
  void ga_host_gemm_bias_f32##SUFFIX(GA_GEMM_BIAS_PARAMS) {                    \
    hostGemmBias(KIND, transA, transB, m, n, k, a, offsetA, lda, b, offsetB,   \
                 ldb, bias, offsetBias, d, offsetD, ldd);                      \
  }

GA_HOST_GEMM_ENTRY_POINTS(, Operands::F32)
GA_HOST_GEMM_ENTRY_POINTS(_tf32, Operands::F32)
GA_HOST_GEMM_ENTRY_POINTS(_bf16, Operands::RoundedF32)
GA_HOST_GEMM_ENTRY_POINTS(_bf16in, Operands::StoredBF16)
#undef GA_HOST_GEMM_ENTRY_POINTS

void ga_host_gemm_bf16_bf16in(GA_GEMM_ROUNDED_PARAMS) {
  hostGemmRounded(transA, transB, m, n, k, a, offsetA, lda, b, offsetB, ldb, 0,
                  0, d, offsetD, ldd);
}
void ga_host_gemm_bias_bf16_bf16in(GA_GEMM_BIAS_PARAMS) {
  hostGemmRounded(transA, transB, m, n, k, a, offsetA, lda, b, offsetB, ldb,
                  bias, offsetBias, d, offsetD, ldd);
}

} // extern "C"
