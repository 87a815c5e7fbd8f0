//===- TrainToLinalg.h - Lower train ops to linalg --------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CONVERSION_TRAINTOLINALG_H
#define GA_CONVERSION_TRAINTOLINALG_H

#include "llvm/Support/LogicalResult.h"

namespace mlir {
class Operation;
class RewritePatternSet;
} // namespace mlir

namespace ga::train {
class CheckLabelsOp;
} // namespace ga::train

namespace ga {

/// Adds the patterns that lower train.cross_entropy to linalg on tensors.
void populateTrainToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// train.attention and train.attention_grad as loops over key tiles
/// (AttentionToLinalg.cpp).
void populateAttentionToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// Lowers every `train.cross_entropy_grad` under `root` (static shapes)
/// together with the `train.cross_entropy` on the same logits, labels and
/// ignore_index before it in its block, if there is one: the row statistics
/// and the valid count are computed once, and the gradient is computed in
/// place of the logits where nothing after it reads them. Ops without such a
/// partner are left to populateTrainToLinalgPatterns.
void lowerPairedCrossEntropies(mlir::Operation *root);

/// Lowers `op` to a linalg reduction that finds the first invalid label and
/// a call of the runtime's `ga_report_error` under `scf.if` (declared in the
/// enclosing symbol table if missing), and erases it. Fails, with an error on
/// the op, for dynamic shapes or a conflicting declaration.
llvm::LogicalResult lowerCheckLabels(train::CheckLabelsOp op);

} // namespace ga

#endif // GA_CONVERSION_TRAINTOLINALG_H
