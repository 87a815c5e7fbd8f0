//===- Rewrites.h - ga-legalize-import's rewrites, shared -------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The rewrites of ga-legalize-import (LegalizeImport.cpp says what each
// does), in two files by what they remove: the forms of shapes and layouts
// (ShapePatterns.cpp) and the forms of indices (IndexPatterns.cpp); and the
// helpers both use.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_TRANSFORMS_LEGALIZEIMPORT_REWRITES_H
#define GA_LIB_TRANSFORMS_LEGALIZEIMPORT_REWRITES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallBitVector.h"

namespace ga::legalize {

/// A linalg.generic with the same body as `op` (moved out of it), and the
/// given operands and maps.
mlir::linalg::GenericOp rebuildGeneric(mlir::PatternRewriter &rewriter,
                                       mlir::linalg::GenericOp op,
                                       mlir::ValueRange inputs,
                                       mlir::ValueRange outputs,
                                       llvm::ArrayRef<mlir::AffineMap> maps);

/// The reassociation that collapses away the dimensions `drop` of a shape
/// of rank `rank` (each dropped one joins a kept neighbour); empty when all
/// of them are dropped.
llvm::SmallVector<mlir::ReassociationIndices>
collapseDropping(int64_t rank, const llvm::SmallBitVector &drop);

/// Replaces, in `op`'s body, the block argument of every input for which
/// `inBody` builds a value (at the body's start; null keeps the input), and
/// drops those inputs. Fails when it replaces none.
mlir::LogicalResult replaceInputsInBody(
    mlir::linalg::GenericOp op, mlir::PatternRewriter &rewriter,
    llvm::function_ref<mlir::Value(mlir::OpOperand &, mlir::BlockArgument)>
        inBody);

/// The map from the indices of `value` to those of the tensor that it
/// reshapes by inserting or removing dimensions of extent 1 only (through
/// any number of such reshapes); `value` becomes that tensor. The identity
/// when `value` is no such reshape.
mlir::AffineMap peelUnitReshapes(mlir::Value &value);

/// Unit maps, dead results, splats, broadcasts, batch matmuls of a
/// broadcast, transposed operands.
void populateShapePatterns(mlir::RewritePatternSet &patterns);

/// Iotas, loop gathers and the bounds checks of loop indices.
void populateIndexPatterns(mlir::RewritePatternSet &patterns);

} // namespace ga::legalize

#endif // GA_LIB_TRANSFORMS_LEGALIZEIMPORT_REWRITES_H
