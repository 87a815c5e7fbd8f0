//===- TensorBuilders.h - Small linalg-on-tensors builders -------*- C++
//-*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The few tensor-level building blocks that the conversions and the
// transformations all need: constant-filled tensors, the test for a tensor of
// zeros, scalar conversions, and elementwise / 0-d `linalg.generic`s.
//
//===----------------------------------------------------------------------===//

#ifndef GA_UTILS_TENSORBUILDERS_H
#define GA_UTILS_TENSORBUILDERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace ga {

/// A tensor of `shape` filled with `value` (linalg.fill of a constant).
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         llvm::ArrayRef<int64_t> shape, mlir::TypedAttr value);

/// A tensor of `type` (a ranked tensor type) filled with zeros.
mlir::Value zerosLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);

/// Whether `value` is a tensor of zeros: a linalg.fill of a zero constant or
/// a zero splat constant.
bool isZeroTensor(mlir::Value value);

/// Converts an integer or float scalar `value` to `type` (an integer or
/// float type); integers are signed.
mlir::Value convertScalar(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, mlir::Type type);

/// Applies `fn` to the scalars of the 0-d tensors `inputs`, giving a 0-d
/// tensor of `resultElement` (a linalg.generic without loops).
mlir::Value
mapScalars(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange inputs,
           mlir::Type resultElement,
           llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                          mlir::ValueRange)>
               fn);

/// An elementwise linalg.generic over `shape`: `tensors` are read with the
/// identity map and `scalars` (0-d tensors) broadcast; `fn` gets the tensor
/// elements then the scalars and returns one value per result type.
llvm::SmallVector<mlir::Value>
elementwise(mlir::OpBuilder &b, mlir::Location loc,
            llvm::ArrayRef<int64_t> shape, mlir::ValueRange tensors,
            mlir::ValueRange scalars, mlir::TypeRange resultElements,
            llvm::function_ref<llvm::SmallVector<mlir::Value>(
                mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>
                fn);

/// Erases `op` (whose results have no uses), then every pure operation
/// that this leaves without uses among the producers of its operands,
/// transitively: a replaced computation with its fills and empty tensors.
void eraseWithDeadProducers(mlir::Operation *op);

/// `size` elements of dimension `dim` of the ranked tensor `tensor` from
/// `offset`, every other dimension whole (tensor.extract_slice).
mlir::Value sliceAlong(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value tensor, unsigned dim,
                       mlir::OpFoldResult offset, int64_t size);

/// `part` written into `into` from `offset` along dimension `dim`, every
/// other dimension whole (tensor.insert_slice).
mlir::Value insertAlong(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value part, mlir::Value into, unsigned dim,
                        mlir::OpFoldResult offset);

} // namespace ga

#endif // GA_UTILS_TENSORBUILDERS_H
