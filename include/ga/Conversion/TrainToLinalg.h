//===- TrainToLinalg.h - Lower train ops to linalg --------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CONVERSION_TRAINTOLINALG_H
#define GA_CONVERSION_TRAINTOLINALG_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace ga {

/// Adds the patterns that lower train.cross_entropy to linalg on tensors.
void populateTrainToLinalgPatterns(mlir::RewritePatternSet &patterns);

} // namespace ga

#endif // GA_CONVERSION_TRAINTOLINALG_H
