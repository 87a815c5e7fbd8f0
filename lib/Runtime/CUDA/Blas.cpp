//===- Blas.cpp - The step's GEMMs on cuBLAS ------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga_cuda_gemm_*: the products ga-gpu-gemm-to-blas hands to cuBLAS, on the
// step's stream, in float32 (CUBLAS_DEFAULT_MATH: no TF32), TF32
// (gpu-tf32) or bfloat16 inputs with float32 products and sums (gpu-bf16).
// cuBLAS is loaded on the first GEMM: GA_CUBLAS_LIBRARY, else
// libcublas.so.13 or .12 on the loader's path or in the CUDA toolkit's
// lib64. Its workspace is fixed: without one, cuBLAS allocates and frees
// its own around GEMMs that need it, which waits for the device (and makes
// results depend on what memory it got).
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

namespace ga::cuda {

/// cuBLAS's workspace, shared with cuBLASLt.
static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

/// Loads cuBLAS once, makes its handle on the step's stream and gives it the
/// workspace.
bool ensureBlas(State &s) {
  Blas &blas = s.blas;
  if (blas.tried)
    return blas.handle != nullptr;
  blas.tried = true;
  void *lib = openFirst(toolkitCandidates("GA_CUBLAS_LIBRARY", "libcublas"));
  if (!lib) {
    recordError(s, "the step multiplies matrices with cuBLAS, which cannot "
                   "be loaded (libcublas.so.13 or .12; set "
                   "GA_CUBLAS_LIBRARY, or compile with "
                   "--pipeline-options gpu-blas=false)");
    return false;
  }
  CublasFunctions &fn = blas.fn;
  if (std::string missing = fn.bind(lib); !missing.empty()) {
    recordError(s, "the cuBLAS library lacks " + missing);
    return false;
  }
  void *handle = nullptr;
  int rc = fn.cublasCreate_v2(&handle);
  if (rc != 0) {
    recordError(s, "cublasCreate failed: cuBLAS status " + std::to_string(rc));
    return false;
  }
  if ((rc = fn.cublasSetStream_v2(handle, s.stream)) != 0 ||
      (rc = fn.cublasSetMathMode(handle, /*CUBLAS_DEFAULT_MATH=*/0)) != 0) {
    recordError(s, "cuBLAS setup failed: status " + std::to_string(rc));
    return false;
  }
  if (fn.cublasSetWorkspace_v2) {
    CUdeviceptr workspace = allocate(s, kWorkspaceBytes, /*counted=*/false);
    if (!workspace || (rc = fn.cublasSetWorkspace_v2(
                           handle, reinterpret_cast<void *>(workspace),
                           kWorkspaceBytes)) != 0) {
      recordError(s, "cublasSetWorkspace failed: status " + std::to_string(rc));
      return false;
    }
    blas.workspace = workspace;
    blas.workspaceBytes = kWorkspaceBytes;
  }
  blas.handle = handle;
  blas.library = lib;
  return true;
}

/// Sets cuBLAS's math mode for `precision`: CUBLAS_TF32_TENSOR_OP_MATH (3)
/// or CUBLAS_DEFAULT_MATH (0); bf16 is asked for by the compute type of the
/// Ex calls.
static bool setMathMode(State &s, GemmPrecision precision) {
  int mode = precision == GemmPrecision::TF32 ? 3 : 0;
  if (mode == s.blas.mathMode)
    return true;
  if (int rc = s.blas.fn.cublasSetMathMode(s.blas.handle, mode)) {
    recordError(s, "cublasSetMathMode failed: status " + std::to_string(rc));
    return false;
  }
  s.blas.mathMode = mode;
  return true;
}

std::string gemmShape(int64_t m, int64_t n, int64_t k, int64_t count) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
         (count > 1 ? " x" + std::to_string(count) : "");
}

std::string gemmLabel(const std::string &call, int64_t m, int64_t n, int64_t k,
                      int64_t count, bool transA, bool transB) {
  return call + " " + gemmShape(m, n, k, count) + (transA ? " A^T" : "") +
         (transB ? " B^T" : "");
}

void endGemm(State &s, long timed, const std::string &failure) {
  profileEnd(s, timed);
  if (!failure.empty())
    recordError(s, failure);
  else
    afterLaunch(s);
}

/// C += op(A) op(B), or C = op(A) op(B) without `accumulate` (C is not
/// read: a product from zero), for row-major f32 matrices:
/// C is m x n with leading dimension ldc; op(A) is m x k (A is k x m when
/// transA); op(B) is k x n (B is n x k when transB); offsets in elements
/// from the aligned pointers; `count` such products, the i-th at offsets
/// advanced by i times the strides; the products scaled by alpha. cuBLAS is
/// column-major: it computes the transposed product C^T += op(B)^T op(A)^T.
static void gemm(GemmPrecision precision, int32_t transA, int32_t transB,
                 int32_t accumulate, int64_t m, int64_t n, int64_t k,
                 int64_t count, float alpha, intptr_t a, int64_t offsetA,
                 int64_t lda, int64_t strideA, intptr_t b, int64_t offsetB,
                 int64_t ldb, int64_t strideB, intptr_t c, int64_t offsetC,
                 int64_t ldc, int64_t strideC) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty() || !ensureBlas(s))
    return;
  if (m == 0 || n == 0 || count == 0)
    return;
  CublasFunctions &fn = s.blas.fn;
  bool bf16 = precision == GemmPrecision::BF16;
  if (bf16 && (!fn.cublasGemmEx || !fn.cublasGemmStridedBatchedEx)) {
    recordError(s, "the step multiplies in bfloat16 (gpu-bf16), and the "
                   "cuBLAS library lacks cublasGemmEx or "
                   "cublasGemmStridedBatchedEx");
    return;
  }
  if (!setMathMode(s, precision))
    return;
  // beta: C += (accumulate) or C = (a product from zero, C not read).
  const float beta = accumulate ? 1.0f : 0.0f;
  // Named only for the profile and for errors: not on every call.
  const char *call =
      bf16 ? (count > 1 ? "cublasGemmStridedBatchedEx bf16"
                        : "cublasGemmEx bf16")
           : (count > 1 ? "cublasSgemmStridedBatched" : "cublasSgemm");
  auto shape = [&] {
    return std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k) + (count > 1 ? " x" + std::to_string(count) : "");
  };
  long timed =
      s.profile.enabled
          ? profileBegin(s, std::string(call) + " " + shape() +
                                (transA ? " A^T" : "") + (transB ? " B^T" : ""))
          : -1;
  const float *A = reinterpret_cast<const float *>(a) + offsetA;
  const float *B = reinterpret_cast<const float *>(b) + offsetB;
  float *C = reinterpret_cast<float *>(c) + offsetC;
  // cuBLAS's column-major sizes: the transposed product (see above).
  int opA = transB ? 1 : 0, opB = transA ? 1 : 0;
  int rows = static_cast<int>(n), cols = static_cast<int>(m),
      depth = static_cast<int>(k), ldA = static_cast<int>(ldb),
      ldB = static_cast<int>(lda), ldC = static_cast<int>(ldc),
      batches = static_cast<int>(count);
  // CUDA_R_32F matrices, CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT.
  constexpr int r32f = 0, fast16bf = 75, defaultAlgo = -1;
  void *handle = s.blas.handle;
  int rc;
  if (bf16 && count > 1)
    rc = fn.cublasGemmStridedBatchedEx(handle, opA, opB, rows, cols, depth,
                                       &alpha, B, r32f, ldA, strideB, A, r32f,
                                       ldB, strideA, &beta, C, r32f, ldC,
                                       strideC, batches, fast16bf, defaultAlgo);
  else if (bf16)
    rc = fn.cublasGemmEx(handle, opA, opB, rows, cols, depth, &alpha, B, r32f,
                         ldA, A, r32f, ldB, &beta, C, r32f, ldC, fast16bf,
                         defaultAlgo);
  else if (count > 1)
    rc = fn.cublasSgemmStridedBatched(handle, opA, opB, rows, cols, depth,
                                      &alpha, B, ldA, strideB, A, ldB, strideA,
                                      &beta, C, ldC, strideC, batches);
  else
    rc = fn.cublasSgemm_v2(handle, opA, opB, rows, cols, depth, &alpha, B, ldA,
                           A, ldB, &beta, C, ldC);
  endGemm(s, timed,
          rc == 0 ? std::string()
                  : std::string(call) + " (" + gemmShape(m, n, k, count) +
                        ") failed: cuBLAS status " + std::to_string(rc));
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" {

// The entry points of one precision (see ga_cuda.h): a single product and
// `count` products with strides. `order` says how the step multiplied by
// alpha (the CPU emulation follows it; cuBLAS scales the sum).
#define GA_CUDA_GEMM_ENTRY_POINTS(SUFFIX, PRECISION)                           \
  void ga_cuda_gemm_f32##SUFFIX(GA_GEMM_PARAMS) {                              \
    gemm(PRECISION, transA, transB, accumulate, m, n, k, 1, 1.0f, a, offsetA,  \
         lda, 0, b, offsetB, ldb, 0, c, offsetC, ldc, 0);                      \
  }                                                                            \
  void ga_cuda_gemm_batched_f32##SUFFIX(GA_GEMM_BATCHED_PARAMS) {              \
    (void)order;                                                               \
    gemm(PRECISION, transA, transB, accumulate, m, n, k, count, alpha, a,      \
         offsetA, lda, strideA, b, offsetB, ldb, strideB, c, offsetC, ldc,     \
         strideC);                                                             \
  }

GA_CUDA_GEMM_ENTRY_POINTS(, GemmPrecision::F32)
GA_CUDA_GEMM_ENTRY_POINTS(_tf32, GemmPrecision::TF32)
GA_CUDA_GEMM_ENTRY_POINTS(_bf16, GemmPrecision::BF16)
#undef GA_CUDA_GEMM_ENTRY_POINTS

} // extern "C"
