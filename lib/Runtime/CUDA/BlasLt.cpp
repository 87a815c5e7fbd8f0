//===- BlasLt.cpp - GEMMs with a bias epilogue on cuBLASLt ----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga_cuda_gemm_bias_*: D = op(A) op(B) + bias in one cuBLASLt matmul with
// the CUBLASLT_EPILOGUE_BIAS epilogue (ga-gpu-gemm-to-blas
// bias-epilogue); ga_cuda_gemm_bf16_bf16in and ga_cuda_gemm_bias_bf16_bf16in
// the same with a bfloat16 D (and bias), the default epilogue for the
// first (precision=bf16's per-example products). cuBLASLt is loaded after
// cuBLAS, whose workspace it shares: GA_CUBLASLT_LIBRARY if set; else the
// cuBLAS library loaded, where its functions are found (cuBLAS links cuBLASLt);
// else libcublasLt.so.13 or .12 on the loader's path or in the CUDA toolkit's
// lib64. The descriptors and the algorithm of a shape are made once (the
// heuristic is a host-side search); later calls only set the bias pointer.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

#include <cstdlib>
#include <optional>

namespace ga::cuda {

static bool ensureBlasLt(State &s) {
  BlasLt &lt = s.blasLt;
  if (lt.tried)
    return lt.handle != nullptr;
  lt.tried = true;
  if (!ensureBlas(s))
    return false;
  void *lib = nullptr;
  if (!std::getenv("GA_CUBLASLT_LIBRARY") &&
      dlsym(s.blas.library, "cublasLtCreate"))
    lib = s.blas.library;
  else
    lib = openFirst(toolkitCandidates("GA_CUBLASLT_LIBRARY", "libcublasLt"));
  if (!lib) {
    recordError(s, "the step calls cuBLASLt (biases added in GEMM "
                   "epilogues, or products written as bfloat16 with "
                   "precision=bf16), and cuBLASLt cannot be loaded "
                   "(libcublasLt.so.13 or .12; set GA_CUBLASLT_LIBRARY, or "
                   "compile with --pipeline-options gpu-bias-epilogue=false "
                   "and a precision other than bf16)");
    return false;
  }
  if (std::string missing = lt.fn.bind(lib); !missing.empty()) {
    recordError(s, "the cuBLASLt library lacks " + missing);
    return false;
  }
  void *handle = nullptr;
  if (int rc = lt.fn.cublasLtCreate(&handle)) {
    recordError(s, "cublasLtCreate failed: status " + std::to_string(rc));
    return false;
  }
  lt.handle = handle;
  return true;
}

/// A sequence of cuBLASLt calls that stops at the first failure:
/// `step(name, status)` records it and returns whether every call so far
/// succeeded.
struct LtCalls {
  std::string failed;
  bool operator()(const char *what, int rc) {
    if (rc != 0 && failed.empty())
      failed = std::string(what) + " failed: status " + std::to_string(rc);
    return failed.empty();
  }
};

/// Makes `plan` for the bias GEMMs of one shape (see gemmBias): the
/// descriptor with the transpositions and the bias epilogue, the three
/// layouts, and the algorithm cuBLASLt's heuristic chooses within the
/// shared workspace. On failure (recorded in `step`), what was made is
/// destroyed.
static bool makeBiasPlan(State &s, GemmPrecision precision, bool withBias,
                         bool bf16Out, int32_t transA, int32_t transB,
                         int64_t m, int64_t n, int64_t k, int64_t lda,
                         int64_t ldb, int64_t ldd, BlasLtPlan &plan,
                         LtCalls &step) {
  CublasLtFunctions &fn = s.blasLt.fn;
  // CUBLAS_COMPUTE_32F (68) or _FAST_TF32 (77); CUDA_R_32F (0) scales and
  // D; A and B CUDA_R_16BF (14) for gpu-bf16 (rounded by the runtime, see
  // RoundedOperands) and bf16-mixed (stored so), else CUDA_R_32F; D (and
  // so the bias) CUDA_R_16BF with `bf16Out`.
  int compute = precision == GemmPrecision::TF32 ? 77 : 68;
  constexpr int r32f = 0, r16bf = 14;
  int inputType = readsBf16(precision) ? r16bf : r32f;
  constexpr int transAttr = 3, transBAttr = 4, epilogueAttr = 7,
                workspaceAttr = 1;
  int32_t opA = transB ? 1 : 0, opB = transA ? 1 : 0;
  // CUBLASLT_EPILOGUE_BIAS (4), or CUBLASLT_EPILOGUE_DEFAULT (1).
  uint32_t epilogue = withBias ? 4 : 1;
  int outputType = bf16Out ? r16bf : r32f;
  uint64_t workspaceBytes = s.blas.workspaceBytes;
  void *preference = nullptr;
  int count = 0;
  auto setDesc = [&](int attribute, const void *value, size_t size) {
    return step(
        "cublasLtMatmulDescSetAttribute",
        fn.cublasLtMatmulDescSetAttribute(plan.desc, attribute, value, size));
  };
  auto layout = [&](void **made, int type, int64_t rows, int64_t cols,
                    int64_t ld) {
    return step("cublasLtMatrixLayoutCreate",
                fn.cublasLtMatrixLayoutCreate(made, type, rows, cols, ld));
  };
  // cuBLASLt's A is our B (stored n x k, or k x n when transposed, in
  // column-major terms), its B our A, its D ours transposed.
  bool ok =
      step("cublasLtMatmulDescCreate",
           fn.cublasLtMatmulDescCreate(&plan.desc, compute, r32f)) &&
      setDesc(transAttr, &opA, sizeof(opA)) &&
      setDesc(transBAttr, &opB, sizeof(opB)) &&
      setDesc(epilogueAttr, &epilogue, sizeof(epilogue)) &&
      layout(&plan.layoutA, inputType, transB ? k : n, transB ? n : k, ldb) &&
      layout(&plan.layoutB, inputType, transA ? m : k, transA ? k : m, lda) &&
      layout(&plan.layoutD, outputType, n, m, ldd) &&
      step("cublasLtMatmulPreferenceCreate",
           fn.cublasLtMatmulPreferenceCreate(&preference)) &&
      step("cublasLtMatmulPreferenceSetAttribute",
           fn.cublasLtMatmulPreferenceSetAttribute(preference, workspaceAttr,
                                                   &workspaceBytes,
                                                   sizeof(workspaceBytes))) &&
      step("cublasLtMatmulAlgoGetHeuristic",
           fn.cublasLtMatmulAlgoGetHeuristic(
               s.blasLt.handle, plan.desc, plan.layoutA, plan.layoutB,
               plan.layoutD, plan.layoutD, preference, 1, &plan.found, &count));
  if (preference)
    fn.cublasLtMatmulPreferenceDestroy(preference);
  if (ok && (count < 1 || plan.found.state != 0)) {
    step.failed = "cublasLtMatmulAlgoGetHeuristic found no algorithm";
    ok = false;
  }
  if (ok)
    return true;
  for (void *made : {plan.layoutA, plan.layoutB, plan.layoutD})
    if (made)
      fn.cublasLtMatrixLayoutDestroy(made);
  if (plan.desc)
    fn.cublasLtMatmulDescDestroy(plan.desc);
  return false;
}

/// D = op(A) op(B) + bias for row-major f32 matrices, the bias (n elements,
/// contiguous) added to every row of D (m x n, leading dimension ldd),
/// written without reading D. cuBLASLt is column-major: it computes
/// D^T = op(B)^T op(A)^T + bias, the bias along D^T's n rows.
///
/// Without `withBias`, D = op(A) op(B); with `bf16Out`, D (and the bias)
/// bfloat16, the float32 sum rounded once (A and B bfloat16).
static void gemmBias(GemmPrecision precision, bool withBias, bool bf16Out,
                     int32_t transA, int32_t transB, int64_t m, int64_t n,
                     int64_t k, intptr_t a, int64_t offsetA, int64_t lda,
                     intptr_t b, int64_t offsetB, int64_t ldb, intptr_t bias,
                     int64_t offsetBias, intptr_t d, int64_t offsetD,
                     int64_t ldd) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty() || !ensureBlasLt(s))
    return;
  if (m == 0 || n == 0)
    return;
  BlasLt &lt = s.blasLt;
  long timed = s.profile.enabled
                   ? profileBegin(s, gemmLabel(withBias ? "cublasLtMatmul bias"
                                                        : "cublasLtMatmul",
                                               m, n, k, 1, transA, transB))
                   : -1;
  LtCalls step;
  // The plan of this shape: made (and its algorithm chosen) on the first
  // call, reused by every later step; a plan that failed is not kept.
  std::array<int64_t, 11> key = {static_cast<int64_t>(precision),
                                 withBias,
                                 bf16Out,
                                 transA,
                                 transB,
                                 m,
                                 n,
                                 k,
                                 lda,
                                 ldb,
                                 ldd};
  auto [it, made] = lt.plans.try_emplace(key);
  BlasLtPlan &plan = it->second;
  if (made && !makeBiasPlan(s, precision, withBias, bf16Out, transA, transB, m,
                            n, k, lda, ldb, ldd, plan, step))
    lt.plans.erase(it);
  // gpu-bf16: A and B rounded to bfloat16 (RoundedOperands).
  const float *floatA = reinterpret_cast<const float *>(a) + offsetA;
  const float *floatB = reinterpret_cast<const float *>(b) + offsetB;
  const void *A = floatA, *B = floatB;
  if (precision == GemmPrecision::BF16Inputs) {
    A = reinterpret_cast<const uint16_t *>(a) + offsetA;
    B = reinterpret_cast<const uint16_t *>(b) + offsetB;
  }
  std::optional<RoundedOperands> rounded;
  if (step.failed.empty() && precision == GemmPrecision::BF16) {
    rounded.emplace(s, transA, transB, m, n, k, /*count=*/1, floatA, lda,
                    /*strideA=*/0, floatB, ldb, /*strideB=*/0);
    if (!*rounded)
      step.failed = "rounding to bfloat16";
    A = rounded->roundedA();
    B = rounded->roundedB();
  }
  if (step.failed.empty()) {
    // The bias pointer is the only attribute that changes between calls.
    size_t outBytes = bf16Out ? sizeof(uint16_t) : sizeof(float);
    const void *biasPointer =
        reinterpret_cast<const char *>(bias) + offsetBias * outBytes;
    void *D = reinterpret_cast<char *>(d) + offsetD * outBytes;
    const float one = 1.0f, zero = 0.0f;
    constexpr int biasAttr = 8; // CUBLASLT_MATMUL_DESC_BIAS_POINTER
    if (!withBias ||
        step("cublasLtMatmulDescSetAttribute",
             lt.fn.cublasLtMatmulDescSetAttribute(
                 plan.desc, biasAttr, &biasPointer, sizeof(biasPointer))))
      step("cublasLtMatmul",
           lt.fn.cublasLtMatmul(lt.handle, plan.desc, &one, B, plan.layoutA, A,
                                plan.layoutB, &zero, D, plan.layoutD, D,
                                plan.layoutD, &plan.found.algo,
                                reinterpret_cast<void *>(s.blas.workspace),
                                plan.found.workspaceSize, s.stream));
  }
  endGemm(s, timed,
          step.failed.empty()
              ? std::string()
              : step.failed + (withBias ? " (bias GEMM " : " (GEMM ") +
                    gemmShape(m, n, k) + ")");
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" {

// The bias GEMM of one precision (see ga_cuda.h).
#define GA_CUDA_GEMM_BIAS_ENTRY_POINT(SUFFIX, PRECISION)                       \
  void ga_cuda_gemm_bias_f32##SUFFIX(GA_GEMM_BIAS_PARAMS) {                    \
    gemmBias(PRECISION, /*withBias=*/true, /*bf16Out=*/false, transA, transB,  \
             m, n, k, a, offsetA, lda, b, offsetB, ldb, bias, offsetBias, d,   \
             offsetD, ldd);                                                    \
  }

GA_CUDA_GEMM_BIAS_ENTRY_POINT(, GemmPrecision::F32)
GA_CUDA_GEMM_BIAS_ENTRY_POINT(_tf32, GemmPrecision::TF32)
GA_CUDA_GEMM_BIAS_ENTRY_POINT(_bf16, GemmPrecision::BF16)
GA_CUDA_GEMM_BIAS_ENTRY_POINT(_bf16in, GemmPrecision::BF16Inputs)
#undef GA_CUDA_GEMM_BIAS_ENTRY_POINT

void ga_cuda_gemm_bf16_bf16in(GA_GEMM_ROUNDED_PARAMS) {
  gemmBias(GemmPrecision::BF16Inputs, /*withBias=*/false, /*bf16Out=*/true,
           transA, transB, m, n, k, a, offsetA, lda, b, offsetB, ldb, 0, 0, d,
           offsetD, ldd);
}
void ga_cuda_gemm_bias_bf16_bf16in(GA_GEMM_BIAS_PARAMS) {
  gemmBias(GemmPrecision::BF16Inputs, /*withBias=*/true, /*bf16Out=*/true,
           transA, transB, m, n, k, a, offsetA, lda, b, offsetB, ldb, bias,
           offsetBias, d, offsetD, ldd);
}

} // extern "C"
