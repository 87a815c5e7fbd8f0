//===- NormalizeLoss.h - Mean losses into sum + count -----------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The rewrite behind `train-normalize-loss`, shared with `train-split-batch`,
// which runs it on every step it splits exactly, so that its contract does
// not depend on the order of the passes.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRANSFORMS_NORMALIZELOSS_H
#define GA_TRANSFORMS_NORMALIZELOSS_H

#include "mlir/Support/LLVM.h"

namespace ga {
namespace train {
class StepOp;
} // namespace train

/// Rewrites the `train.cross_entropy` operations of `step`:
/// * the `count` result of each one becomes a count of its valid labels (a
///   reduction over the labels alone, so that a split computes it before the
///   micro-batches without computing the logits);
/// * with `means`, each `reduction = mean` becomes `sum / max(count, 1)`.
/// Fails, with an error on the operation, on a non-float loss type.
mlir::LogicalResult normalizeLosses(train::StepOp step, bool means);

} // namespace ga

#endif // GA_TRANSFORMS_NORMALIZELOSS_H
