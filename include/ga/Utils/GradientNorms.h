//===- GradientNorms.h - Global norms and clipping as linalg ----*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The arithmetic of train.global_norm and train.clip_by_global_norm as
// linalg on tensors, shared by their lowering (convert-train-to-linalg) and
// by train-shard-state, which takes the norm of gradients held in shards:
// both compute the same squares, sums and scale.
//
//===----------------------------------------------------------------------===//

#ifndef GA_UTILS_GRADIENTNORMS_H
#define GA_UTILS_GRADIENTNORMS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace ga {

/// The sum over `inputs` of the sum of their squared elements, computed in
/// `element` (a float type), as a 0-d tensor.
mlir::Value sumOfSquares(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::ValueRange inputs, mlir::Type element);

/// sqrt of the 0-d tensor `squares`.
mlir::Value squareRoot(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value squares);

/// sqrt(sum over `inputs` of sum(x^2)) as a 0-d tensor of `element`, the
/// squares summed in float64 (`sumOfSquares`) and the root rounded to
/// `element`. `reduce`, if given, completes the float64 sum first (an
/// all-reduce across ranks of the shards' sums).
mlir::Value
wideNorm(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange inputs,
         mlir::Type element,
         llvm::function_ref<mlir::Value(mlir::Value)> reduce = nullptr);

/// min(1, maxNorm / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_
/// scales, from the 0-d tensor `norm` of `element`.
mlir::Value clipScale(mlir::OpBuilder &b, mlir::Location loc, mlir::Value norm,
                      mlir::Type element, double maxNorm);

/// `input` times the 0-d tensor `scale`, computed in `element` and rounded
/// back to the input's element type.
mlir::Value scaleBy(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                    mlir::Value scale, mlir::Type element);

} // namespace ga

#endif // GA_UTILS_GRADIENTNORMS_H
