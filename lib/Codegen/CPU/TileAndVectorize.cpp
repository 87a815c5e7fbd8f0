//===- TileAndVectorize.cpp - Vector code for the CPU pipeline ------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Tiles the linalg operations on tensors whose shape suits vector code and
// vectorizes the tiles. The choice of tile sizes is the whole cost model:
// the innermost result dimension becomes the vector lane dimension (it is
// contiguous in the result, and in every operand that reads it innermost),
// a reduction additionally computes `registerRows` result rows at once so
// that a contraction reuses each loaded row of its right-hand side.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ga {
#define GEN_PASS_DEF_GATILEANDVECTORIZEPASS
#include "ga/Codegen/CPU/Passes.h.inc"
} // namespace ga

#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

/// Reductions up to this long and not divisible by the vector width are one
/// tile; longer ones are tiled by their largest divisor up to the width.
static constexpr int64_t kMaxUntiledReduction = 64;

/// One-dimensional fills shorter than this are stored whole, as a few
/// vector stores without a loop. They are the fills that ga-outline-kernels
/// leaves in the step function (the zero inits of bias and norm gradients),
/// a few per layer; as loops, they made the step function's lowering to
/// the CFG split its one block once per loop, quadratic in the model's
/// depth.
static constexpr int64_t kMaxWholeFill = 1024;

/// The tile sizes for `op`, or nothing when it should stay scalar.
static std::optional<SmallVector<int64_t>>
chooseTileSizes(linalg::LinalgOp op, int64_t width, int64_t rows) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() == 0 ||
      op.getNumLoops() == 0 || op.hasDynamicShape())
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  bool unsupportedBody = false;
  op->walk([&](Operation *nested) {
    if (isa<tensor::ExtractOp, linalg::IndexOp>(nested))
      unsupportedBody = true;
  });
  if (unsupportedBody)
    return std::nullopt;
  for (Value operand : op->getOperands()) {
    auto shaped = dyn_cast<ShapedType>(operand.getType());
    Type element = shaped ? shaped.getElementType() : operand.getType();
    if (!element.isIntOrIndexOrFloat())
      return std::nullopt;
    // A tensor of sub-byte elements (an i1 mask) is one byte per element
    // in memory (memref's layout), while a vector of them is stored packed
    // (LLVM's `<8 x i1>` is one byte): a vector transfer and a scalar access
    // of the same buffer would disagree. Ops that read or write such a
    // tensor keep their scalar loops; masks computed and consumed inside one
    // body (a compare feeding a select) stay vectors in registers.
    if (shaped && element.isIntOrFloat() &&
        element.getIntOrFloatBitWidth() % 8 != 0)
      return std::nullopt;
  }

  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // The vectorizer assumes the usual form: every output is indexed by the
  // parallel loops, each once, and by no reduction loop. The verifier also
  // accepts outputs indexed by a loop marked "reduction" (or missing a
  // parallel loop); such ops keep their scalar loops, which are correct for
  // any iterator marking.
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    llvm::SmallBitVector indexed(ranges.size());
    for (AffineExpr result : map.getResults())
      indexed.set(cast<AffineDimExpr>(result).getPosition());
    for (auto [dim, iterator] : llvm::enumerate(iterators))
      if (indexed.test(dim) != (iterator == utils::IteratorType::parallel))
        return std::nullopt;
  }
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() == 0)
    return std::nullopt;
  unsigned lane = cast<AffineDimExpr>(out.getResults().back()).getPosition();
  if (ranges[lane] % width != 0)
    return std::nullopt;

  SmallVector<int64_t> tiles(ranges.size(), 1);
  tiles[lane] = width;
  // Only the innermost reduction dimension is vectorized; the others keep
  // tile size 1. Tiles then visit the reduced elements in the lexicographic
  // order of the iteration space, as the scalar loops do, and a reduction is
  // computed in the same order whatever its shape: a split batch sums its
  // tokens in the order of the full batch. Whatever the reduction's length,
  // the operation is vectorized: a contraction's tiles multiply and add
  // with fused multiply-adds, its scalar loops with a multiply and an add,
  // so a reduction over the tokens left scalar at one micro-batch size and
  // vectorized at another would round differently.
  bool reduces = false;
  for (unsigned dim = ranges.size(); dim-- > 0;) {
    if (iterators[dim] != utils::IteratorType::reduction)
      continue;
    if (reduces)
      continue;
    reduces = true;
    if (ranges[dim] % width == 0) {
      tiles[dim] = width;
    } else if (ranges[dim] <= kMaxUntiledReduction) {
      tiles[dim] = ranges[dim];
    } else {
      int64_t divisor = width;
      while (ranges[dim] % divisor != 0)
        --divisor;
      tiles[dim] = divisor;
    }
  }
  if (reduces && out.getNumResults() >= 2) {
    unsigned row =
        cast<AffineDimExpr>(out.getResults()[out.getNumResults() - 2])
            .getPosition();
    if (ranges[row] % rows == 0)
      tiles[row] = rows;
  }
  if (isa<linalg::FillOp>(op) && ranges.size() == 1 &&
      ranges[0] < kMaxWholeFill)
    tiles[0] = ranges[0];
  // A tile as large as the loop itself needs no loop: tile size 0 keeps the
  // dimension whole.
  for (auto [tile, range] : llvm::zip(tiles, ranges))
    if (tile == range)
      tile = 0;
  return tiles;
}

/// Iteration spaces smaller than this (in points of the loop nest) are not
/// worth a fork and join of threads.
static constexpr int64_t kMinParallelWork = 1 << 14;

/// Marks the tile loops of `op` that run over its parallel dimensions with
/// `train.parallel` (ga-parallelize-loops runs them on threads): each such
/// tile writes its own part of every result. `op` has the form
/// chooseTileSizes accepts: every output is indexed by each parallel loop
/// and by no reduction loop.
static void markParallelLoops(linalg::LinalgOp op, ArrayRef<int64_t> tiles,
                              ArrayRef<LoopLikeOpInterface> loops) {
  // A fill stores one value at memory speed: threads do not pay for their
  // fork and join, and each parallel region would be outlined from the
  // function that holds the fill (the step itself, where fills stay when
  // the other ops become kernels), whose outlining cost grows with the
  // function's size: quadratic in the model's depth.
  if (isa<linalg::FillOp>(op))
    return;
  int64_t work = 1;
  for (int64_t range : op.getStaticLoopRanges())
    work *= range;
  if (work < kMinParallelWork)
    return;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned next = 0;
  for (auto [dim, tile] : llvm::enumerate(tiles)) {
    if (tile == 0)
      continue;
    if (next >= loops.size())
      return;
    // The outer loops of the nest, as long as they are parallel: a parallel
    // loop inside a reduction loop would fork and join at each step.
    if (iterators[dim] != utils::IteratorType::parallel)
      return;
    loops[next++]->setAttr("train.parallel", UnitAttr::get(op.getContext()));
  }
}

namespace {
struct GaTileAndVectorizePass
    : ga::impl::GaTileAndVectorizePassBase<GaTileAndVectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    if (vectorWidth < 1 || registerRows < 1) {
      getOperation()->emitError()
          << "ga-tile-and-vectorize: vector-width and register-rows must be "
             "positive (got "
          << static_cast<int64_t>(vectorWidth) << " and "
          << static_cast<int64_t>(registerRows) << ")";
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> candidates;
    getOperation()->walk(
        [&](linalg::LinalgOp op) { candidates.push_back(op); });

    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates) {
      std::optional<SmallVector<int64_t>> tiles =
          chooseTileSizes(op, vectorWidth, registerRows);
      if (!tiles)
        continue;
      rewriter.setInsertionPoint(op);
      Operation *toVectorize = op;
      if (llvm::any_of(*tiles, [](int64_t t) { return t != 0; })) {
        scf::SCFTilingOptions options;
        options.setTileSizes(getAsIndexOpFoldResult(&getContext(), *tiles));
        options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
        FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
            rewriter, cast<TilingInterface>(op.getOperation()), options);
        if (failed(tiled))
          continue;
        markParallelLoops(op, *tiles, tiled->loops);
        rewriter.replaceOp(op, tiled->replacements);
        if (tiled->tiledOps.size() != 1)
          continue;
        toVectorize = tiled->tiledOps.front();
      }
      rewriter.setInsertionPoint(toVectorize);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, toVectorize, /*inputVectorSizes=*/{},
                            /*inputScalableVecDims=*/{},
                            /*vectorizeNDExtract=*/false,
                            /*flatten1DDepthwiseConv=*/false,
                            /*assumeDynamicDimsMatchVecSizes=*/false,
                            /*createNamedContraction=*/true);
      if (failed(vectorized))
        continue;
      if (!vectorized->replacements.empty())
        rewriter.replaceOp(toVectorize, vectorized->replacements);
      else
        rewriter.eraseOp(toVectorize);
    }

    // A contraction written as a linalg.generic vectorizes to a product and
    // a vector.multi_reduction, a named one to vector.contract. Folding the
    // first form into the second gives every contraction the same code (one
    // fused multiply-add per term, in order), so the same product computes
    // the same bits whether it came from a named op or a generic.
    RewritePatternSet patterns(&getContext());
    vector::populateVectorReductionToContractPatterns(patterns);
    // Reads that broadcast become a read and a vector.broadcast, which the
    // contraction patterns fold into the contraction's indexing maps.
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
