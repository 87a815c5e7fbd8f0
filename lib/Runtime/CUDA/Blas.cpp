//===- Blas.cpp - The step's GEMMs on cuBLAS ------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga_cuda_gemm_*: the products ga-gpu-gemm-to-blas hands to cuBLAS, on the
// step's stream, in float32 (CUBLAS_DEFAULT_MATH: no TF32), TF32
// (gpu-tf32) or bfloat16 inputs with float32 products and sums (gpu-bf16:
// the operands rounded to the nearest bfloat16 by a kernel of the runtime,
// then cuBLAS on bfloat16 matrices). Two-level batches (the attention's
// products over heads and sequences) are one call on arrays of pointers.
// cuBLAS is loaded on the first GEMM: GA_CUBLAS_LIBRARY, else
// libcublas.so.13 or .12 on the loader's path or in the CUDA toolkit's
// lib64. Its workspace is fixed: without one, cuBLAS allocates and frees
// its own around GEMMs that need it, which waits for the device (and makes
// results depend on what memory it got).
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace ga::cuda {

/// cuBLAS's workspace, shared with cuBLASLt.
static constexpr size_t kWorkspaceBytes = GA_CUDA_BLAS_WORKSPACE_BYTES;
/// Its last bytes: the pointer arrays of two-level batches.
static constexpr size_t kPointerBytes = GA_CUDA_BLAS_POINTER_BYTES;

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
                           kWorkspaceBytes - kPointerBytes)) != 0) {
      recordError(s, "cublasSetWorkspace failed: status " + std::to_string(rc));
      return false;
    }
    blas.workspace = workspace;
    blas.workspaceBytes = kWorkspaceBytes - kPointerBytes;
    blas.pointerArea = workspace + kWorkspaceBytes - kPointerBytes;
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

/// The runtime's kernels, PTX compiled by the driver when first loaded
/// (sm_80 and later: the first with cvt.rn.bf16.f32). ga_round_to_bf16:
/// out[i] = bf16(in[i]) for i < n, a grid-stride loop.
/// ga_round_matrices_to_bf16: `count` row-major rows x cols matrices, the
/// b-th at in + b stride with leading dimension ld, into one compact block:
/// out[(b rows + r) cols + c] = bf16(in[b stride + r ld + c]); one block of
/// threads per matrix row (t = b rows + r, a grid-stride loop over the
/// count * rows of them), its threads along the row.
/// ga_gemm_pointer_arrays: the pointers of `total` products (product t at
/// o = t / count, i = t % count) into out: out[t] = a + o outer_a + i
/// stride_a, out[total + t] likewise from b, out[2 total + t] from c
/// (strides in bytes); a grid-stride loop.
static const char kRuntimePtx[] = R"ptx(
.version 7.8
.target sm_80
.address_size 64

.visible .entry ga_round_to_bf16(.param .u64 ga_in, .param .u64 ga_out,
                                 .param .u64 ga_n)
{
  .reg .pred %p;
  .reg .b16 %h;
  .reg .f32 %f;
  .reg .b32 %bid, %bdim, %tix, %gdim;
  .reg .b64 %in, %out, %n, %i, %step, %a;
  ld.param.u64 %in, [ga_in];
  ld.param.u64 %out, [ga_out];
  ld.param.u64 %n, [ga_n];
  cvta.to.global.u64 %in, %in;
  cvta.to.global.u64 %out, %out;
  mov.u32 %bid, %ctaid.x;
  mov.u32 %bdim, %ntid.x;
  mov.u32 %tix, %tid.x;
  mov.u32 %gdim, %nctaid.x;
  mul.wide.u32 %i, %bid, %bdim;
  cvt.u64.u32 %step, %tix;
  add.u64 %i, %i, %step;
  mul.wide.u32 %step, %gdim, %bdim;
LOOP:
  setp.ge.u64 %p, %i, %n;
  @%p bra DONE;
  shl.b64 %a, %i, 2;
  add.u64 %a, %in, %a;
  ld.global.f32 %f, [%a];
  cvt.rn.bf16.f32 %h, %f;
  shl.b64 %a, %i, 1;
  add.u64 %a, %out, %a;
  st.global.b16 [%a], %h;
  add.u64 %i, %i, %step;
  bra LOOP;
DONE:
  ret;
}

.visible .entry ga_round_matrices_to_bf16(
    .param .u64 ga_in, .param .u64 ga_out, .param .u64 ga_rows,
    .param .u64 ga_cols, .param .u64 ga_ld, .param .u64 ga_stride,
    .param .u64 ga_total)
{
  .reg .pred %p;
  .reg .b16 %h;
  .reg .f32 %f;
  .reg .b32 %bid, %gdim, %tix, %bdim;
  .reg .b64 %in, %out, %rows, %cols, %ld, %stride, %total, %t, %b, %r, %c,
      %src, %dst, %a, %tstep, %cstep;
  ld.param.u64 %in, [ga_in];
  ld.param.u64 %out, [ga_out];
  ld.param.u64 %rows, [ga_rows];
  ld.param.u64 %cols, [ga_cols];
  ld.param.u64 %ld, [ga_ld];
  ld.param.u64 %stride, [ga_stride];
  ld.param.u64 %total, [ga_total];
  cvta.to.global.u64 %in, %in;
  cvta.to.global.u64 %out, %out;
  mov.u32 %bid, %ctaid.x;
  mov.u32 %gdim, %nctaid.x;
  mov.u32 %tix, %tid.x;
  mov.u32 %bdim, %ntid.x;
  cvt.u64.u32 %t, %bid;
  cvt.u64.u32 %tstep, %gdim;
  cvt.u64.u32 %cstep, %bdim;
ROW:
  setp.ge.u64 %p, %t, %total;
  @%p bra DONE;
  div.u64 %b, %t, %rows;
  mul.lo.u64 %r, %b, %rows;
  sub.u64 %r, %t, %r;
  mul.lo.u64 %src, %b, %stride;
  mad.lo.u64 %src, %r, %ld, %src;
  mul.lo.u64 %dst, %t, %cols;
  cvt.u64.u32 %c, %tix;
COL:
  setp.ge.u64 %p, %c, %cols;
  @%p bra NEXT;
  add.u64 %a, %src, %c;
  shl.b64 %a, %a, 2;
  add.u64 %a, %in, %a;
  ld.global.f32 %f, [%a];
  cvt.rn.bf16.f32 %h, %f;
  add.u64 %a, %dst, %c;
  shl.b64 %a, %a, 1;
  add.u64 %a, %out, %a;
  st.global.b16 [%a], %h;
  add.u64 %c, %c, %cstep;
  bra COL;
NEXT:
  add.u64 %t, %t, %tstep;
  bra ROW;
DONE:
  ret;
}
.visible .entry ga_gemm_pointer_arrays(
    .param .u64 ga_out, .param .u64 ga_a, .param .u64 ga_b, .param .u64 ga_c,
    .param .u64 ga_count, .param .u64 ga_total, .param .u64 ga_outer_a,
    .param .u64 ga_stride_a, .param .u64 ga_outer_b, .param .u64 ga_stride_b,
    .param .u64 ga_outer_c, .param .u64 ga_stride_c)
{
  .reg .pred %p;
  .reg .b32 %bid, %bdim, %tix, %gdim;
  .reg .b64 %out, %a, %b, %c, %count, %total, %oa, %sa, %ob, %sb, %oc, %sc,
      %t, %step, %o, %i, %v, %addr, %part;
  ld.param.u64 %out, [ga_out];
  ld.param.u64 %a, [ga_a];
  ld.param.u64 %b, [ga_b];
  ld.param.u64 %c, [ga_c];
  ld.param.u64 %count, [ga_count];
  ld.param.u64 %total, [ga_total];
  ld.param.u64 %oa, [ga_outer_a];
  ld.param.u64 %sa, [ga_stride_a];
  ld.param.u64 %ob, [ga_outer_b];
  ld.param.u64 %sb, [ga_stride_b];
  ld.param.u64 %oc, [ga_outer_c];
  ld.param.u64 %sc, [ga_stride_c];
  cvta.to.global.u64 %out, %out;
  mov.u32 %bid, %ctaid.x;
  mov.u32 %bdim, %ntid.x;
  mov.u32 %tix, %tid.x;
  mov.u32 %gdim, %nctaid.x;
  mul.wide.u32 %t, %bid, %bdim;
  cvt.u64.u32 %step, %tix;
  add.u64 %t, %t, %step;
  mul.wide.u32 %step, %gdim, %bdim;
  shl.b64 %part, %total, 3;
LOOP:
  setp.ge.u64 %p, %t, %total;
  @%p bra DONE;
  div.u64 %o, %t, %count;
  mul.lo.u64 %i, %o, %count;
  sub.u64 %i, %t, %i;
  shl.b64 %addr, %t, 3;
  add.u64 %addr, %out, %addr;
  mad.lo.u64 %v, %o, %oa, %a;
  mad.lo.u64 %v, %i, %sa, %v;
  st.global.u64 [%addr], %v;
  add.u64 %addr, %addr, %part;
  mad.lo.u64 %v, %o, %ob, %b;
  mad.lo.u64 %v, %i, %sb, %v;
  st.global.u64 [%addr], %v;
  add.u64 %addr, %addr, %part;
  mad.lo.u64 %v, %o, %oc, %c;
  mad.lo.u64 %v, %i, %sc, %v;
  st.global.u64 [%addr], %v;
  add.u64 %t, %t, %step;
  bra LOOP;
DONE:
  ret;
}
)ptx";

/// The elements a row-major matrix of `count` copies `stride` apart spans
/// from its first: (count - 1) * stride + (rows - 1) * ld + cols (0 when
/// empty).
static int64_t matrixSpan(int64_t rows, int64_t cols, int64_t ld, int64_t count,
                          int64_t stride) {
  if (rows == 0 || cols == 0 || count == 0)
    return 0;
  return (count - 1) * stride + (rows - 1) * ld + cols;
}

/// Loads the runtime's kernel `name` into `function` on first use (its
/// module too); false (recorded) on failure.
static bool loadRuntimeKernel(State &s, CUfunction &function,
                              const char *name) {
  Blas &blas = s.blas;
  if (function)
    return true;
  if (!blas.runtimeModule &&
      !check(s, s.cu.cuModuleLoadData(&blas.runtimeModule, kRuntimePtx),
             "cuModuleLoadData (the runtime's kernels)"))
    return false;
  return check(s, s.cu.cuModuleGetFunction(&function, blas.runtimeModule, name),
               ("cuModuleGetFunction(" + std::string(name) + ")").c_str());
}

/// Loads the rounding kernels on first use; false (recorded) on failure.
static bool loadRounding(State &s) {
  return loadRuntimeKernel(s, s.blas.roundToBf16, "ga_round_to_bf16") &&
         loadRuntimeKernel(s, s.blas.roundMatrices,
                           "ga_round_matrices_to_bf16");
}

/// A block of the allocator for `elements` bfloat16 values, filled by
/// `kernel` on the step's stream: `params` are the kernel's, `*out` among
/// them (set to the block before the launch). 0 on failure, recorded.
static CUdeviceptr launchRounding(State &s, CUfunction kernel, int64_t elements,
                                  unsigned blocks, unsigned threads,
                                  uint64_t *out, void **params) {
  CUdeviceptr rounded =
      allocate(s, static_cast<size_t>(std::max<int64_t>(elements, 1)) * 2,
               /*counted=*/true);
  if (!rounded || elements == 0)
    return rounded;
  *out = rounded;
  if (!check(s,
             s.cu.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0,
                                 s.stream, params, nullptr),
             "cuLaunchKernel (a bfloat16 rounding kernel)")) {
    release(s, rounded);
    return 0;
  }
  return rounded;
}

/// The `elements` float32 values at `source` rounded to bfloat16 into a
/// block of the allocator (ga_round_to_bf16); 0 on failure, recorded.
static CUdeviceptr roundedToBf16(State &s, const float *source,
                                 int64_t elements) {
  if (!loadRounding(s))
    return 0;
  uint64_t in = reinterpret_cast<uintptr_t>(source), out = 0,
           n = static_cast<uint64_t>(elements);
  void *params[] = {&in, &out, &n};
  constexpr int64_t block = 256, maxBlocks = 4096;
  unsigned blocks = static_cast<unsigned>(
      std::clamp<int64_t>((elements + block - 1) / block, 1, maxBlocks));
  return launchRounding(s, s.blas.roundToBf16, elements, blocks, block, &out,
                        params);
}

/// `count` rows x cols matrices at `source` (the b-th at b * stride, rows
/// `ld` apart) rounded to bfloat16 into one compact block of the allocator
/// (rows * cols apart, rows `cols` apart; ga_round_matrices_to_bf16); 0 on
/// failure, recorded.
static CUdeviceptr compactToBf16(State &s, const float *source, int64_t rows,
                                 int64_t cols, int64_t ld, int64_t count,
                                 int64_t stride) {
  if (!loadRounding(s))
    return 0;
  uint64_t in = reinterpret_cast<uintptr_t>(source), out = 0,
           r = static_cast<uint64_t>(rows), c = static_cast<uint64_t>(cols),
           l = static_cast<uint64_t>(ld), st = static_cast<uint64_t>(stride),
           total = static_cast<uint64_t>(count * rows);
  void *params[] = {&in, &out, &r, &c, &l, &st, &total};
  // Threads along a row (a warp at least, 256 at most), a block per row up
  // to a grid of 65,536 (the loop takes the rest).
  unsigned threads = static_cast<unsigned>(
      std::clamp<int64_t>((cols + 31) / 32 * 32, 32, 256));
  unsigned blocks = static_cast<unsigned>(
      std::clamp<int64_t>(count * rows, 1, int64_t(1) << 16));
  return launchRounding(s, s.blas.roundMatrices, count * rows * cols, blocks,
                        threads, &out, params);
}

/// One operand of a GEMM rounded: a single matrix's span as it lies (its
/// leading dimension kept, as cuBLASLt's plans of bias GEMMs expect), a
/// batch whose matrices lie back to back likewise, a batch whose matrices
/// lie apart (or overlap) gathered into a compact block. Sets ld and stride
/// to the rounded operand's.
static CUdeviceptr roundOperand(State &s, const float *source, int64_t rows,
                                int64_t cols, int64_t count, int64_t &ld,
                                int64_t &stride) {
  bool compact = ld == cols && stride == rows * cols;
  if (count <= 1 || compact || rows == 0 || cols == 0)
    return roundedToBf16(s, source, matrixSpan(rows, cols, ld, count, stride));
  CUdeviceptr rounded = compactToBf16(s, source, rows, cols, ld, count, stride);
  ld = cols;
  stride = rows * cols;
  return rounded;
}

RoundedOperands::RoundedOperands(State &s, int32_t transA, int32_t transB,
                                 int64_t m, int64_t n, int64_t k, int64_t count,
                                 const float *a, int64_t lda, int64_t strideA,
                                 const float *b, int64_t ldb, int64_t strideB)
    : s(s), ldA(lda), stA(strideA), ldB(ldb), stB(strideB) {
  this->a = roundOperand(s, a, transA ? k : m, transA ? m : k, count, ldA, stA);
  if (this->a)
    this->b =
        roundOperand(s, b, transB ? n : k, transB ? k : n, count, ldB, stB);
}

RoundedOperands::~RoundedOperands() {
  for (CUdeviceptr block : {a, b})
    if (block)
      release(s, block);
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

/// The Ex calls' types: CUDA_R_32F (C), CUDA_R_16BF (A and B),
/// CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT.
constexpr int r32f = 0, r16bf = 14, compute32f = 68, defaultAlgo = -1;

/// The error of a cuBLAS call that returned `rc` (empty for 0).
static std::string cublasFailure(const char *call, int64_t m, int64_t n,
                                 int64_t k, int64_t count, int rc) {
  return rc == 0 ? std::string()
                 : std::string(call) + " (" + gemmShape(m, n, k, count) +
                       ") failed: cuBLAS status " + std::to_string(rc);
}

/// A row-major product's arguments in cuBLAS's column-major terms: it
/// computes the transposed product C^T = op(B)^T op(A)^T, so B comes first
/// (its operation, n rows, B's leading dimension), then A (m columns).
struct ColumnMajor {
  int opA, opB, rows, cols, depth, ldA, ldB, ldC, batches;
  ColumnMajor(int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k,
              int64_t lda, int64_t ldb, int64_t ldc, int64_t count)
      : opA(transB ? 1 : 0), opB(transA ? 1 : 0), rows(static_cast<int>(n)),
        cols(static_cast<int>(m)), depth(static_cast<int>(k)),
        ldA(static_cast<int>(ldb)), ldB(static_cast<int>(lda)),
        ldC(static_cast<int>(ldc)), batches(static_cast<int>(count)) {}
};

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
  // gpu-bf16 rounds float32 operands; bf16-mixed's are bfloat16 already.
  bool bf16 = readsBf16(precision);
  bool rounds = precision == GemmPrecision::BF16;
  if (bf16 && (!fn.cublasGemmEx || !fn.cublasGemmStridedBatchedEx)) {
    recordError(s, "the step multiplies in bfloat16 (gpu-bf16 or "
                   "precision=bf16-mixed), and the "
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
  long timed =
      s.profile.enabled
          ? profileBegin(s, gemmLabel(call, m, n, k, count, transA, transB))
          : -1;
  // Offsets count elements of the operands' own type.
  const float *A = reinterpret_cast<const float *>(a) + offsetA;
  const float *B = reinterpret_cast<const float *>(b) + offsetB;
  float *C = reinterpret_cast<float *>(c) + offsetC;
  // gpu-bf16: A and B rounded to bfloat16, multiplied and summed in float32
  // (CUBLAS_COMPUTE_32F).
  std::optional<RoundedOperands> rounded;
  if (rounds) {
    rounded.emplace(s, transA, transB, m, n, k, count, A, lda, strideA, B, ldb,
                    strideB);
    if (!*rounded) {
      endGemm(s, timed, "");
      return;
    }
  }
  const void *inA = A, *inB = B;
  if (precision == GemmPrecision::BF16Inputs) {
    inA = reinterpret_cast<const uint16_t *>(a) + offsetA;
    inB = reinterpret_cast<const uint16_t *>(b) + offsetB;
  } else if (rounds) {
    inA = rounded->roundedA();
    inB = rounded->roundedB();
  }
  // cuBLAS's column-major sizes: the transposed product (see above).
  // gpu-bf16's operands may lie compactly (RoundedOperands).
  if (rounds) {
    lda = rounded->lda();
    strideA = rounded->strideA();
    ldb = rounded->ldb();
    strideB = rounded->strideB();
  }
  auto [opA, opB, rows, cols, depth, ldA, ldB, ldC, batches] =
      ColumnMajor(transA, transB, m, n, k, lda, ldb, ldc, count);
  void *handle = s.blas.handle;
  int rc;
  if (bf16 && count > 1)
    rc = fn.cublasGemmStridedBatchedEx(
        handle, opA, opB, rows, cols, depth, &alpha, inB, r16bf, ldA, strideB,
        inA, r16bf, ldB, strideA, &beta, C, r32f, ldC, strideC, batches,
        compute32f, defaultAlgo);
  else if (bf16)
    rc = fn.cublasGemmEx(handle, opA, opB, rows, cols, depth, &alpha, inB,
                         r16bf, ldA, inA, r16bf, ldB, &beta, C, r32f, ldC,
                         compute32f, defaultAlgo);
  else if (count > 1)
    rc = fn.cublasSgemmStridedBatched(handle, opA, opB, rows, cols, depth,
                                      &alpha, B, ldA, strideB, A, ldB, strideA,
                                      &beta, C, ldC, strideC, batches);
  else
    rc = fn.cublasSgemm_v2(handle, opA, opB, rows, cols, depth, &alpha, B, ldA,
                           A, ldB, &beta, C, ldC);
  endGemm(s, timed, cublasFailure(call, m, n, k, count, rc));
}

/// The device arrays of the pointers of `outer` x `count` products (A's,
/// then B's, then C's, product (o, i) at o count + i), for cuBLAS's
/// pointer-array batches, written by a kernel of the runtime
/// (ga_gemm_pointer_arrays) into the next bytes of the workspace block's
/// pointer area, taken as a ring: every write and every GEMM that reads the
/// arrays is on the step's stream, so the ring's bytes are reused only
/// after the GEMM that read them (and a captured graph replays the same
/// order). 0 for arrays larger than the area, or on failure (recorded).
static CUdeviceptr pointerArrays(State &s, const void *a, int64_t outerA,
                                 int64_t strideA, const void *b, int64_t outerB,
                                 int64_t strideB, void *c, int64_t outerC,
                                 int64_t strideC, int64_t outer, int64_t count,
                                 size_t operandBytes) {
  Blas &blas = s.blas;
  int64_t products = outer * count;
  size_t bytes = 3 * static_cast<size_t>(products) * sizeof(void *);
  if (!blas.pointerArea || bytes > kPointerBytes ||
      !loadRuntimeKernel(s, blas.pointerKernel, "ga_gemm_pointer_arrays"))
    return 0;
  if (blas.pointerNext + bytes > kPointerBytes)
    blas.pointerNext = 0;
  uint64_t out = blas.pointerArea + blas.pointerNext;
  // Each batch's arrays start 16 bytes aligned.
  blas.pointerNext += (bytes + 15) / 16 * 16;
  int64_t element = static_cast<int64_t>(operandBytes);
  uint64_t args[] = {out,
                     reinterpret_cast<uintptr_t>(a),
                     reinterpret_cast<uintptr_t>(b),
                     reinterpret_cast<uintptr_t>(c),
                     static_cast<uint64_t>(count),
                     static_cast<uint64_t>(products),
                     static_cast<uint64_t>(outerA * element),
                     static_cast<uint64_t>(strideA * element),
                     static_cast<uint64_t>(outerB * element),
                     static_cast<uint64_t>(strideB * element),
                     static_cast<uint64_t>(outerC * 4),
                     static_cast<uint64_t>(strideC * 4)};
  void *params[std::size(args)];
  for (size_t i = 0; i < std::size(args); ++i)
    params[i] = &args[i];
  constexpr int64_t block = 256;
  auto blocks = static_cast<unsigned>(
      std::clamp<int64_t>((products + block - 1) / block, 1, 4096));
  long timed = s.profile.enabled
                   ? profileBegin(s, "ga_gemm_pointer_arrays (runtime) x" +
                                         std::to_string(products))
                   : -1;
  bool launched =
      check(s,
            s.cu.cuLaunchKernel(blas.pointerKernel, blocks, 1, 1, block, 1, 1,
                                0, s.stream, params, nullptr),
            "cuLaunchKernel (ga_gemm_pointer_arrays)");
  profileEnd(s, timed);
  return launched ? out : 0;
}

/// `outer` x `count` products of gemm's kind, product (o, i) at offsets
/// advanced by o times the outer strides and i times the strides: one
/// pointer-array batch (cublasSgemmBatched, or cublasGemmBatchedEx for
/// bfloat16 operands). gpu-bf16's rounded operands, a cuBLAS without those
/// calls, and arrays the pointer area cannot hold now (pointerArrays) take
/// a strided batch per outer index instead.
static void gemm2(GemmPrecision precision, int32_t transA, int32_t transB,
                  int32_t accumulate, int64_t m, int64_t n, int64_t k,
                  int64_t outer, int64_t count, float alpha, intptr_t a,
                  int64_t offsetA, int64_t lda, int64_t outerA, int64_t strideA,
                  intptr_t b, int64_t offsetB, int64_t ldb, int64_t outerB,
                  int64_t strideB, intptr_t c, int64_t offsetC, int64_t ldc,
                  int64_t outerC, int64_t strideC) {
  {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.usable || !s.error.empty() || !ensureBlas(s))
      return;
    if (m == 0 || n == 0 || count == 0 || outer == 0)
      return;
    CublasFunctions &fn = s.blas.fn;
    bool bf16 = readsBf16(precision);
    bool arrays = precision != GemmPrecision::BF16 &&
                  (bf16 ? fn.cublasGemmBatchedEx != nullptr
                        : fn.cublasSgemmBatched != nullptr) &&
                  outer * count <= std::numeric_limits<int32_t>::max();
    size_t operandBytes = bf16 ? 2 : 4;
    CUdeviceptr pointers = 0;
    if (arrays) {
      auto *bytesA = reinterpret_cast<const char *>(a) + offsetA * operandBytes;
      auto *bytesB = reinterpret_cast<const char *>(b) + offsetB * operandBytes;
      float *C = reinterpret_cast<float *>(c) + offsetC;
      pointers =
          pointerArrays(s, bytesA, outerA, strideA, bytesB, outerB, strideB, C,
                        outerC, strideC, outer, count, operandBytes);
      if (!s.error.empty())
        return;
    }
    if (pointers) {
      if (!setMathMode(s, precision))
        return;
      const float beta = accumulate ? 1.0f : 0.0f;
      const char *call =
          bf16 ? "cublasGemmBatchedEx bf16" : "cublasSgemmBatched";
      long timed = s.profile.enabled
                       ? profileBegin(s, gemmLabel(call, m, n, k, outer * count,
                                                   transA, transB))
                       : -1;
      // cuBLAS's column-major product C^T = op(B)^T op(A)^T (see gemm).
      auto *arrayA = reinterpret_cast<const void *const *>(pointers);
      const void *const *arrayB = arrayA + outer * count;
      auto *arrayC =
          reinterpret_cast<void *const *>(pointers) + 2 * outer * count;
      auto [opA, opB, rows, cols, depth, ldA, ldB, ldC, batches] =
          ColumnMajor(transA, transB, m, n, k, lda, ldb, ldc, outer * count);
      int rc =
          bf16 ? fn.cublasGemmBatchedEx(s.blas.handle, opA, opB, rows, cols,
                                        depth, &alpha, arrayB, r16bf, ldA,
                                        arrayA, r16bf, ldB, &beta, arrayC, r32f,
                                        ldC, batches, compute32f, defaultAlgo)
               : fn.cublasSgemmBatched(
                     s.blas.handle, opA, opB, rows, cols, depth, &alpha,
                     reinterpret_cast<const float *const *>(arrayB), ldA,
                     reinterpret_cast<const float *const *>(arrayA), ldB, &beta,
                     reinterpret_cast<float *const *>(arrayC), ldC, batches);
      endGemm(s, timed, cublasFailure(call, m, n, k, outer * count, rc));
      return;
    }
  }
  for (int64_t o = 0; o < outer; ++o)
    gemm(precision, transA, transB, accumulate, m, n, k, count, alpha, a,
         offsetA + o * outerA, lda, strideA, b, offsetB + o * outerB, ldb,
         strideB, c, offsetC + o * outerC, ldc, strideC);
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
  }                                                                            \
  void ga_cuda_gemm_batched2_f32##SUFFIX(GA_GEMM_BATCHED2_PARAMS) {            \
    (void)order;                                                               \
    gemm2(PRECISION, transA, transB, accumulate, m, n, k, outer, count, alpha, \
          a, offsetA, lda, outerStrideA, strideA, b, offsetB, ldb,             \
          outerStrideB, strideB, c, offsetC, ldc, outerStrideC, strideC);      \
  }

GA_CUDA_GEMM_ENTRY_POINTS(, GemmPrecision::F32)
GA_CUDA_GEMM_ENTRY_POINTS(_tf32, GemmPrecision::TF32)
GA_CUDA_GEMM_ENTRY_POINTS(_bf16, GemmPrecision::BF16)
GA_CUDA_GEMM_ENTRY_POINTS(_bf16in, GemmPrecision::BF16Inputs)
#undef GA_CUDA_GEMM_ENTRY_POINTS

} // extern "C"
