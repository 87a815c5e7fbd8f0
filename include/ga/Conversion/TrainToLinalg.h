//===- TrainToLinalg.h - Lower train ops to linalg --------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CONVERSION_TRAINTOLINALG_H
#define GA_CONVERSION_TRAINTOLINALG_H

#include "llvm/Support/LogicalResult.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace ga::train {
class CheckLabelsOp;
} // namespace ga::train

namespace ga {

/// Adds the patterns that lower train.cross_entropy to linalg on tensors.
void populateTrainToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// Lowers `op` to a linalg reduction that finds the first invalid label and
/// a call of the runtime's `ga_report_error` under `scf.if` (declared in the
/// enclosing symbol table if missing), and erases it. Fails, with an error on
/// the op, for dynamic shapes or a conflicting declaration.
llvm::LogicalResult lowerCheckLabels(train::CheckLabelsOp op);

} // namespace ga

#endif // GA_CONVERSION_TRAINTOLINALG_H
