//===- BlasMatchers.h - Products as cuBLAS sees them ------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The contractions that ga-gpu-gemm-to-blas hands to cuBLAS, recognized on
// bufferized linalg operations: the matrices' layouts and leading
// dimensions, the scale of the product, a zero fill that the product
// replaces, and a bias addition that becomes the GEMM's epilogue.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_CODEGEN_CUDA_BLASMATCHERS_H
#define GA_LIB_CODEGEN_CUDA_BLASMATCHERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace ga::cuda {

/// A contraction `C[batch, m, n] += A[batch, m, k] B[batch, k, n]` (any
/// layout, any order of the loops) as cuBLAS sees it: row-major matrices
/// given by a leading dimension and a transposition each, one batch
/// dimension run as a strided batch, the others as host loops.
struct BlasForm {
  unsigned m, n, k;           // the loop dimensions
  mlir::OpOperand *a, *b, *c; // op(A) is m x k, op(B) is k x n, C is m x n
  bool transA, transB;        // A stored k x m, B stored n x k
  int64_t lda, ldb, ldc;      // leading dimensions, in elements
  llvm::SmallVector<unsigned> batch; // batch loop dimensions, strided one last
  // Stride of each loop dimension in each matrix (0 where it is absent).
  llvm::SmallVector<int64_t> strideA, strideB, strideC;
  llvm::SmallVector<int64_t> bounds; // static loop bounds
  // The body's product of the two elements x (A's) and y (B's) and a
  // scale `alpha` defined outside: x * y (order 0, no alpha), (x * y) *
  // alpha (1), (x * alpha) * y (2), (y * alpha) * x (3). cuBLAS scales
  // the sum by alpha; the CPU emulation multiplies in this order.
  mlir::Value alpha;
  int order = 0;
  // A and B stored as bfloat16, widened in the body (precision=bf16-mixed):
  // strides and leading dimensions count bfloat16 elements.
  bool bf16Inputs = false;
};

/// A bias addition that only reads a product from zero (see
/// ga-gpu-gemm-to-blas bias-epilogue): `fill` zeroes the product's C, a
/// fresh row-major buffer, and `add` writes `D[i, j] = C[i, j] + bias[j]`
/// into another fresh buffer. With bfloat16 operands (precision=bf16), the
/// same with a bfloat16 D, `add` rounding the sum: `D = bf16(C + bias)`,
/// the bias stored as bfloat16 and widened, or `D = bf16(C)` without a
/// bias (`bias` null).
struct BiasEpilogue {
  mlir::linalg::FillOp fill;
  mlir::linalg::GenericOp add;
  mlir::Value bias, d;
  /// D (and the bias) bfloat16, the sum rounded.
  bool rounded = false;
  int64_t ldd = 0;
  /// Deallocations of the product's A or B between the product and the
  /// addition (a buffer freed after its last use, such as a bfloat16 copy
  /// made for this product alone), and the copies to host memory before
  /// them (ga_cuda_offload calls): they move after the bias GEMM, in their
  /// order, since it still reads A and B where the addition was.
  llvm::SmallVector<mlir::Operation *> deferred;
};

/// The cuBLAS form of `op`, if it has one: an f32 multiply-accumulate
/// contraction (or one of bf16 inputs widened to f32 in the body) with one m,
/// one n and one k dimension, static shapes and strides, each matrix with a
/// contiguous dimension.
std::optional<BlasForm> matchBlas(mlir::linalg::LinalgOp op);

/// The zero fill of the product `op`'s C if the product starts from it: C
/// is a whole fresh buffer that nothing but that fill (of +0) touches
/// before `op`, in `op`'s block. The product then writes C without reading
/// it, and the fill goes.
mlir::linalg::FillOp zeroInit(mlir::linalg::LinalgOp op, const BlasForm &f);

/// The epilogue of the product `op` (form `f`), if it has one: a bias
/// addition (float32, or rounded to bfloat16 where the product reads
/// bfloat16 operands) where `biases`, and a rounding to bfloat16 of such a
/// product whatever `biases` says.
std::optional<BiasEpilogue> matchBiasEpilogue(mlir::linalg::LinalgOp op,
                                              const BlasForm &f, bool biases);

} // namespace ga::cuda

#endif // GA_LIB_CODEGEN_CUDA_BLASMATCHERS_H
