//===- FuseElementwise.cpp - Elementwise producer-consumer fusion ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Upstream's elementwise fusion, restricted to what keeps results bitwise
// and costs nothing: a single-use elementwise producer into an elementwise
// consumer (or, with into-reductions, a reducing one), which reads it
// through a permutation of its loops: each iteration of the consumer reads
// one producer element, and no two read the same. Fusion never makes a
// producer run more than once per element it writes:
//   - a consumer that reduces over a loop the producer's map does not read
//     (a product's k) would recompute the producer at every step of that
//     reduction: the permutation excludes it;
//   - a producer with several users would be computed several times;
//   - a consumer that reads the producer through a broadcast (a map that
//     drops or repeats loops) would compute each producer element once per
//     broadcast element. For a producer whose body reads its init (an
//     accumulation `acc + g`), upstream's fusion keeps that init as an output
//     of the fused op, indexed by the producer's map: under a broadcast the
//     accumulation then runs once per broadcast element, a wrong value, not
//     just a slower one.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/Common/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace ga {
#define GEN_PASS_DEF_GAFUSEELEMENTWISEPASS
#include "ga/Codegen/Common/Passes.h.inc"
} // namespace ga

using namespace mlir;

static bool allParallel(linalg::LinalgOp op) {
  return op.getNumLoops() == op.getNumParallelLoops();
}

/// Whether the producer of `operand` may be fused into its owner. A consumer
/// that also reads its init (an accumulation `acc + g` into a loop's
/// running value) is left alone: fusing more inputs into it can keep
/// bufferization from computing it in place in the loop's buffer.
static bool shouldFuse(OpOperand *operand, bool intoReductions) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  if (!producer || !consumer || !operand->get().hasOneUse() ||
      producer->getNumResults() != 1 || !allParallel(producer) ||
      (!intoReductions && !allParallel(consumer)))
    return false;
  // One consumer iteration per producer element, and the other way round.
  if (!consumer.getMatchingIndexingMap(operand).isPermutation())
    return false;
  for (Value init : consumer.getDpsInits())
    if (llvm::is_contained(consumer.getDpsInputs(), init))
      return false;
  return true;
}

/// Fuses one producer into its consumer somewhere in `root`; false when
/// nothing is left to fuse.
static bool fuseOne(Operation *root, RewriterBase &rewriter,
                    bool intoReductions) {
  OpOperand *found = nullptr;
  root->walk([&](linalg::GenericOp consumer) {
    for (OpOperand *operand : consumer.getDpsInputOperands())
      if (shouldFuse(operand, intoReductions) &&
          linalg::areElementwiseOpsFusable(operand)) {
        found = operand;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (!found)
    return false;
  Operation *consumer = found->getOwner();
  Operation *producer = found->get().getDefiningOp();
  rewriter.setInsertionPoint(consumer);
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, found);
  if (failed(fused))
    return false;
  for (auto [original, replacement] : fused->replacements)
    if (original.getDefiningOp() == consumer)
      rewriter.replaceAllUsesWith(original, replacement);
  rewriter.eraseOp(consumer);
  if (producer->use_empty())
    rewriter.eraseOp(producer);
  return true;
}

namespace {
// Upstream's fusion patterns come with a rewrite of inits that the body does
// not read into tensor.empty, which would keep an accumulation from
// bufferizing in place: the fusion is applied directly instead.
struct GaFuseElementwisePass
    : ga::impl::GaFuseElementwisePassBase<GaFuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    while (fuseOne(getOperation(), rewriter, intoReductions)) {
    }
  }
};
} // namespace
