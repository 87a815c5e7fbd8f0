//===- ParallelizeLoops.cpp - Parallel tile loops on threads --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The outermost tile loops that ga-tile-and-vectorize marked parallel become
// scf.parallel, which the CPU pipeline lowers to OpenMP. Only loops over
// output tiles are parallel: every result element is computed by one thread,
// in the order of the one-thread code.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CPU/Passes.h"

namespace ga {
#define GEN_PASS_DEF_GAPARALLELIZELOOPSPASS
#include "ga/Codegen/CPU/Passes.h.inc"
} // namespace ga

using namespace mlir;

static constexpr llvm::StringLiteral kParallelAttr = "train.parallel";

/// Replaces `loop` (no iteration arguments) with an scf.parallel of the same
/// bounds and body.
static void makeParallel(scf::ForOp loop) {
  OpBuilder b(loop);
  auto parallel = scf::ParallelOp::create(
      b, loop.getLoc(), ValueRange{loop.getLowerBound()},
      ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()});
  Block *from = loop.getBody();
  Block *to = parallel.getBody();
  from->getArgument(0).replaceAllUsesWith(to->getArgument(0));
  to->getOperations().splice(to->getTerminator()->getIterator(),
                             from->getOperations(), from->begin(),
                             std::prev(from->end()));
  loop.erase();
}

namespace {
struct GaParallelizeLoopsPass
    : ga::impl::GaParallelizeLoopsPassBase<GaParallelizeLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<scf::ForOp> outermost;
    getOperation()->walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      if (!loop->hasAttr(kParallelAttr) || loop.getNumResults() != 0)
        return WalkResult::advance();
      outermost.push_back(loop);
      return WalkResult::skip();
    });
    // Nested marks would fork threads inside threads: dropped.
    getOperation()->walk([](scf::ForOp loop) {
      if (loop.getNumResults() == 0)
        loop->removeAttr(kParallelAttr);
    });
    for (scf::ForOp loop : outermost)
      makeParallel(loop);
  }
};
} // namespace
