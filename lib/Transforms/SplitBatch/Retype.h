//===- Retype.h - A split step's operations at a slice of the batch -*- C++
//-*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// What train-split-batch's phases share: slicing rows of the batch, and
// re-typing a cloned operation for a slice with `factor` times fewer rows.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_TRANSFORMS_SPLITBATCH_RETYPE_H
#define GA_LIB_TRANSFORMS_SPLITBATCH_RETYPE_H

#include "ga/Analysis/Decomposability.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace ga::split_batch {

/// `type` with dimension `dim` divided by `factor`.
mlir::RankedTensorType divideDim(mlir::RankedTensorType type, int64_t dim,
                                 int64_t factor);

/// The rows [offset, offset + B / parts) of `operand` along its dimension
/// `dim` (of size B).
mlir::Value takeRows(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::Value operand, mlir::OpFoldResult offset,
                     int64_t parts, int64_t dim = 0);

/// Re-types `clone`, a copy of `original` in the step's body, for a slice of
/// the batch with `factor` times fewer rows: every per-example result (as
/// `analysis` classes `original`'s) and the shape-carrying pieces; an error
/// on `original` where it cannot be re-typed. Region ops are verified later,
/// by verifyRetyped.
mlir::LogicalResult retype(mlir::Operation *original, mlir::Operation *clone,
                           const Decomposability &analysis, int64_t factor);

/// Verifies the re-typed region ops among `clones` (as `originals`), inner
/// ones first: retype() checks them only after their regions.
mlir::LogicalResult verifyRetyped(llvm::ArrayRef<mlir::Operation *> originals,
                                  llvm::ArrayRef<mlir::Operation *> clones,
                                  int64_t factor);

/// Operations of `block` (nested ones included) in pre-order.
llvm::SmallVector<mlir::Operation *> preorder(mlir::Block &block);

/// `op` and the operations nested in it, in pre-order.
llvm::SmallVector<mlir::Operation *> preorder(mlir::Operation *op);

} // namespace ga::split_batch

#endif // GA_LIB_TRANSFORMS_SPLITBATCH_RETYPE_H
