//===- LinalgMatchers.h - Structural matches of linalg ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// What train-raise-attention and train-differentiate both recognize in
// linalg on tensors: a generic's body, its fill, its readers, its maps'
// dimensions, a contraction written as a generic, and the softmax written
// as five generics (row maximum, subtraction, exponential, row sum,
// division) along the last of any number of loops. (train-raise-attention's
// own matches of the scores [B, H, S, T] are in lib/Transforms/Attention.)
//
//===----------------------------------------------------------------------===//

#ifndef GA_UTILS_LINALGMATCHERS_H
#define GA_UTILS_LINALGMATCHERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ga {

/// The op whose result a generic yields, when it yields one value.
mlir::Operation *yieldedOp(mlir::linalg::GenericOp g);

/// Whether `v` is the `i`-th block argument of `g`'s body.
bool isArg(mlir::Value v, mlir::linalg::GenericOp g, unsigned i);

/// The value of a float constant.
std::optional<double> floatConstant(mlir::Value v);

/// The value `init` is filled with (linalg.fill of a float constant).
std::optional<double> fillValue(mlir::Value init);

/// The generic that defines `v`, or null.
mlir::linalg::GenericOp producer(mlir::Value v);

/// Whether exactly `users` read `v` (each once).
bool hasUsers(mlir::Value v, llvm::ArrayRef<mlir::Operation *> users);

/// Whether the body yields OpTy(input 0, output) or OpTy(output, input 0).
template <typename OpTy>
bool combinesInputAndOutput(mlir::linalg::GenericOp g) {
  auto op = llvm::dyn_cast_or_null<OpTy>(yieldedOp(g));
  return op && ((isArg(op.getLhs(), g, 0) && isArg(op.getRhs(), g, 1)) ||
                (isArg(op.getLhs(), g, 1) && isArg(op.getRhs(), g, 0)));
}

/// The first value a generic yields (its only one, where it has one
/// result).
mlir::Value yieldedValue(mlir::linalg::GenericOp g);

/// c where `v` is mulf(input 0 of `g`, c) or mulf(c, input 0), c a float
/// constant.
std::optional<double> constantFactor(mlir::Value v, mlir::linalg::GenericOp g);

/// The loop dimensions of `map`'s results, when each is a plain dimension.
std::optional<llvm::SmallVector<unsigned>> dimsOf(mlir::AffineMap map);

/// Whether `map`'s results are the loop dimensions `dims`, in order.
bool dimsAre(mlir::AffineMap map, llvm::ArrayRef<unsigned> dims);

/// Whether `g` has `inputs` inputs, one init, one result and `reductions`
/// reduction loops.
bool hasShape(mlir::linalg::GenericOp g, unsigned inputs, unsigned reductions);

/// sum over one reduction loop of in0 * in1 (each product optionally times
/// a constant), into a fill of zero: the constant (1 without one) and the
/// reduction loop.
struct Contraction {
  double scale = 1.0;
  unsigned reduction = 0;
};
std::optional<Contraction> matchContraction(mlir::linalg::GenericOp g);

/// probs = exp(s - max_j s) / sum_j exp(s - max_j s) along the last of N
/// loops: the row maximum (from at most the lowest float), the
/// subtraction (in the exponential's generic or one of its own), the
/// exponential, its row sum (from zero) and the division, each generic
/// over identity maps (a row value read at the first N - 1 loops), each
/// intermediate read only by the next steps of the chain. The scores may
/// have other readers.
struct SoftmaxChain {
  mlir::Value scores;
  mlir::linalg::GenericOp rowMax, difference, exp, sum, probs;
};
std::optional<SoftmaxChain> matchSoftmax(mlir::linalg::GenericOp probs);

} // namespace ga

#endif // GA_UTILS_LINALGMATCHERS_H
