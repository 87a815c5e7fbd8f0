//===- SplitReductions.cpp - Reductions in two stages ---------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-split-reductions: a reduction with few results over many elements
// becomes partial reductions over chunks (or interleaved lanes of a row)
// and a final reduction of the partial results, so that enough threads
// share it.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>

namespace ga {
#define GEN_PASS_DEF_GAGPUSPLITREDUCTIONSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

struct GaGpuSplitReductionsPass
    : ga::impl::GaGpuSplitReductionsPassBase<GaGpuSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minThreads < 2 || minChunk < 1) {
      getOperation().emitError()
          << "ga-gpu-split-reductions: min-threads must be at least 2 and "
             "min-chunk at least 1, got "
          << static_cast<int64_t>(minThreads) << " and "
          << static_cast<int64_t>(minChunk);
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
          op.getNumReductionLoops() == 1)
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : candidates) {
      // Lanes where they give at least as many threads as chunks would
      // (their reads are coalesced, the chunks' are not); chunks where
      // they give more (a full reduction: lanes alone would be one warp).
      std::optional<linalg::SplitReductionOptions> split;
      // A row reduction weighs its lanes against chunks of at most
      // kRowChunkThreads threads: a warp's lanes read consecutive elements,
      // chunks of rows read a row apart, so more of them do not pay.
      bool rows = isLaneSplittable(op);
      int64_t chunks =
          chunksOf(op, rows ? std::min<int64_t>(minThreads, kRowChunkThreads)
                            : static_cast<int64_t>(minThreads));
      if (rows && lanes >= chunks)
        // The lane dimension innermost in the partial results and in the
        // parallel loops (the loops are the rows, the steps along the row,
        // then the lanes), so that it runs on threadIdx.x.
        split = linalg::SplitReductionOptions{
            lanes, static_cast<unsigned>(op.getNumParallelLoops()),
            /*innerParallel=*/true};
      else if (chunks >= 2)
        // The chunk dimension outermost in the partial results.
        split = linalg::SplitReductionOptions{chunks, 0,
                                              /*innerParallel=*/false};
      if (!split)
        continue;
      rewriter.setInsertionPoint(op);
      // splitReduction refuses what it cannot split (no recognized
      // combiner, a reduction dimension an operand does not index plainly);
      // such reductions stay as they are.
      (void)linalg::splitReduction(rewriter, op,
                                   [&](linalg::LinalgOp) { return *split; });
    }
  }

  /// Whether `op` is a row reduction that `lanes` interleaved partial
  /// reductions per row may share: its one reduction dimension is the last
  /// loop, of static length at least min-length and a multiple of `lanes`,
  /// the innermost result of every input that reads it (contiguous in a
  /// row-major buffer) and read nowhere else; the output is indexed by the
  /// parallel loops in order, so that the lanes' partial results are rows
  /// of their own.
  bool isLaneSplittable(linalg::GenericOp op) {
    SmallVector<int64_t> bounds = op.getStaticLoopRanges();
    if (lanes < 2 || llvm::any_of(bounds, ShapedType::isDynamic))
      return false;
    unsigned numLoops = op.getNumLoops();
    unsigned last = numLoops - 1;
    if (op.getIteratorTypesArray()[last] != utils::IteratorType::reduction)
      return false;
    int64_t length = bounds[last];
    if (length < minLength || length < lanes || length % lanes != 0)
      return false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      for (auto [i, expr] : llvm::enumerate(map.getResults())) {
        auto d = dyn_cast<AffineDimExpr>(expr);
        bool readsRow = expr.isFunctionOfDim(last);
        if (readsRow && (!d || i + 1 != map.getNumResults()))
          return false;
      }
    }
    AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    return out == AffineMap::getMultiDimIdentityMap(numLoops, op.getContext())
                      .getMajorSubMap(last);
  }

  /// Row reductions: the most threads of chunks weighed against lanes.
  static constexpr int64_t kRowChunkThreads = 16384;

  /// The number of chunks to split `op`'s reduction in (at most `cap`
  /// partial results), or 1.
  int64_t chunksOf(linalg::GenericOp op, int64_t cap) {
    SmallVector<int64_t> bounds = op.getStaticLoopRanges();
    if (llvm::any_of(bounds, ShapedType::isDynamic))
      return 1;
    SmallVector<unsigned> reductions;
    op.getReductionDims(reductions);
    int64_t total = bounds[reductions[0]];
    int64_t results = 1;
    for (auto [i, bound] : llvm::enumerate(bounds))
      if (i != reductions[0])
        results *= bound;
    if (results >= cap || total < minLength)
      return 1;
    // Each thread of the first stage sums R / c elements, each of the
    // second c: the divisor closest to sqrt(R) makes the longest sequential
    // chain, R / c + c, shortest.
    int64_t best = 1, cost = total + 1;
    for (int64_t c = 2; c * results <= cap && total / c >= minChunk; ++c)
      if (total % c == 0 && total / c + c < cost) {
        best = c;
        cost = total / c + c;
      }
    return best;
  }
};

} // namespace
