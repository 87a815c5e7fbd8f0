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
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <limits>

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
    if (lanes >= 2)
      splitRowStatistics();
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

  /// Whether `op` reduces the last of its loops, the others parallel, over
  /// a float32 first input read whole and in order, into a float32 result
  /// indexed by the other loops in order; with `inputs` = 2, a second
  /// input read by row as the result is (the row's maximum).
  static bool isRowReduction(linalg::GenericOp op, unsigned inputs,
                             bool bf16Row = false) {
    unsigned n = op.getNumLoops();
    if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != inputs ||
        op.getNumDpsInits() != 1 || n < 2 || op.getNumReductionLoops() != 1 ||
        op.getIteratorTypesArray()[n - 1] != utils::IteratorType::reduction)
      return false;
    MLIRContext *ctx = op.getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(n, ctx);
    AffineMap row = identity.getMajorSubMap(n - 1);
    if (op.getMatchingIndexingMap(op.getDpsInputOperand(0)) != identity ||
        op.getMatchingIndexingMap(op.getDpsInitOperand(0)) != row ||
        (inputs == 2 &&
         op.getMatchingIndexingMap(op.getDpsInputOperand(1)) != row))
      return false;
    for (Value v : op->getOperands()) {
      Type element = cast<ShapedType>(v.getType()).getElementType();
      if (!element.isF32() &&
          !(bf16Row && v == op.getDpsInputs()[0] && element.isBF16()))
        return false;
    }
    return true;
  }

  /// The operations of `op`'s body, before its yield, if there are `n`.
  static SmallVector<Operation *> bodyOps(linalg::GenericOp op, size_t n) {
    SmallVector<Operation *> ops;
    for (Operation &inner : op.getBlock()->without_terminator())
      ops.push_back(&inner);
    if (ops.size() != n)
      ops.clear();
    return ops;
  }

  /// Whether `op` is an `OpTy` of `a` and `b`, in either order.
  template <typename OpTy> static bool isPair(Operation *op, Value a, Value b) {
    auto pair = dyn_cast<OpTy>(op);
    return pair && ((pair->getOperand(0) == a && pair->getOperand(1) == b) ||
                    (pair->getOperand(0) == b && pair->getOperand(1) == a));
  }

  /// The body's operations but a first one that widens its first input
  /// from bfloat16 (precision=bf16's rounded logits), if they are `n`, and
  /// the element `x` they read (that widening, or the input itself).
  static SmallVector<Operation *> elementOps(linalg::GenericOp op, size_t n,
                                             Value &x) {
    Block *body = op.getBlock();
    x = body->getArgument(0);
    SmallVector<Operation *> ops = bodyOps(op, n + 1);
    auto widen = ops.empty() ? nullptr : dyn_cast<arith::ExtFOp>(ops[0]);
    if (widen && widen.getIn() == x && x.getType().isBF16() &&
        widen.getType().isF32()) {
      x = widen.getResult();
      ops.erase(ops.begin());
      return ops;
    }
    return bodyOps(op, n);
  }

  /// A row's maximum, `max(x, out)` over the last loop (x its input or
  /// the input's widening).
  static bool isRowMax(linalg::GenericOp op) {
    if (!isRowReduction(op, 1, /*bf16Row=*/true))
      return false;
    Value x;
    SmallVector<Operation *> ops = elementOps(op, 1, x);
    Block *body = op.getBlock();
    return !ops.empty() &&
           isPair<arith::MaximumFOp>(ops[0], x, body->getArgument(1)) &&
           body->getTerminator()->getOperand(0) == ops[0]->getResult(0);
  }

  /// The sum of a row's exponentials shifted by `max`'s result, `exp(x -
  /// m) + out` over the last loop of the same input, from zero.
  static bool isRowSumExp(linalg::GenericOp op, linalg::GenericOp max) {
    if (!isRowReduction(op, 2, /*bf16Row=*/true) ||
        op.getDpsInputs()[0] != max.getDpsInputs()[0] ||
        op.getDpsInputs()[1] != max->getResult(0))
      return false;
    auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
    if (!fill || !matchPattern(fill.getInputs()[0], m_PosZeroFloat()))
      return false;
    Value x;
    SmallVector<Operation *> ops = elementOps(op, 3, x);
    Block *body = op.getBlock();
    if (ops.empty())
      return false;
    auto sub = dyn_cast<arith::SubFOp>(ops[0]);
    auto exp = dyn_cast<math::ExpOp>(ops[1]);
    return sub && exp && sub.getLhs() == x &&
           sub.getRhs() == body->getArgument(1) &&
           exp.getOperand() == sub.getResult() &&
           isPair<arith::AddFOp>(ops[2], exp.getResult(),
                                 body->getArgument(2)) &&
           body->getTerminator()->getOperand(0) == ops[2]->getResult(0);
  }

  /// The online form of a running (maximum, sum of exponentials) pair
  /// taking in another (`m2`, `s2`): m = max(m1, m2), s = s1 exp(m1 - m)
  /// + s2 exp(m2 - m), 0 while m is -inf (nothing but -inf so far: the
  /// elements' shares are 0 against any finite maximum to come).
  static std::pair<Value, Value> combine(OpBuilder &b, Location loc, Value m1,
                                         Value s1, Value m2, Value s2) {
    Value m = arith::MaximumFOp::create(b, loc, m1, m2);
    auto share = [&](Value s, Value from) -> Value {
      Value e =
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, from, m));
      return s ? arith::MulFOp::create(b, loc, s, e).getResult() : e;
    };
    // In this order (function arguments have none).
    Value first = share(s1, m1);
    Value second = share(s2, m2);
    Value sum = arith::AddFOp::create(b, loc, first, second);
    Value ninf = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    Value none =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, ninf);
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    return {m, arith::SelectOp::create(b, loc, none, zero, sum)};
  }

  /// A row's maximum and the sum of its exponentials shifted by it (the
  /// cross-entropy's statistics, a softmax's), which read every row twice,
  /// as one pass of `lanes` interleaved online partial pairs per row
  /// (each lane keeps its maximum and its sum rescaled to it), then the
  /// lanes' pairs combined in lane order: where the row reductions would be
  /// split into lanes anyway (isLaneSplittable), so that the summation
  /// order changes only where it changes already.
  void splitRowStatistics() {
    SmallVector<std::pair<linalg::GenericOp, linalg::GenericOp>> pairs;
    getOperation().walk([&](linalg::GenericOp max) {
      if (!isRowMax(max) || !isLaneSplittable(max))
        return;
      for (Operation *user : max->getResult(0).getUsers()) {
        auto sum = dyn_cast<linalg::GenericOp>(user);
        if (sum && sum->getBlock() == max->getBlock() &&
            isRowSumExp(sum, max)) {
          pairs.push_back({max, sum});
          return;
        }
      }
    });
    IRRewriter rewriter(&getContext());
    for (auto [max, sum] : pairs) {
      OpBuilder b(max);
      Location loc = max.getLoc();
      Value x = max.getDpsInputs()[0];
      auto xType = cast<RankedTensorType>(x.getType());
      unsigned n = xType.getRank();
      int64_t length = xType.getDimSize(n - 1);
      // x as [rows..., steps, lanes].
      SmallVector<int64_t> shape(xType.getShape());
      shape.back() = length / lanes;
      shape.push_back(lanes);
      SmallVector<ReassociationIndices> groups;
      for (unsigned d = 0; d + 1 < n; ++d)
        groups.push_back({static_cast<int64_t>(d)});
      groups.push_back({static_cast<int64_t>(n - 1), static_cast<int64_t>(n)});
      Value lanesView =
          tensor::ExpandShapeOp::create(b, loc, xType.clone(shape), x, groups);
      SmallVector<int64_t> partialShape(xType.getShape().drop_back());
      partialShape.push_back(lanes);
      Value partialMax = ga::filledTensor(
          b, loc, partialShape,
          b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
      Value partialSum =
          ga::filledTensor(b, loc, partialShape, b.getF32FloatAttr(0.0f));
      MLIRContext *ctx = b.getContext();
      // Loops: the rows, the steps along a row (reduced), the lanes.
      AffineMap all = AffineMap::getMultiDimIdentityMap(n + 1, ctx);
      SmallVector<AffineExpr> laneResults;
      for (unsigned d = 0; d + 1 < n; ++d)
        laneResults.push_back(b.getAffineDimExpr(d));
      laneResults.push_back(b.getAffineDimExpr(n));
      AffineMap partialMap = AffineMap::get(n + 1, 0, laneResults, ctx);
      SmallVector<utils::IteratorType> iterators(n - 1,
                                                 utils::IteratorType::parallel);
      iterators.push_back(utils::IteratorType::reduction);
      iterators.push_back(utils::IteratorType::parallel);
      auto partial = linalg::GenericOp::create(
          b, loc, TypeRange{partialMax.getType(), partialSum.getType()},
          ValueRange{lanesView}, ValueRange{partialMax, partialSum},
          ArrayRef<AffineMap>{all, partialMap, partialMap}, iterators,
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            // A bfloat16 row (precision=bf16's logits), widened.
            Value element = args[0];
            if (!element.getType().isF32())
              element =
                  arith::ExtFOp::create(nb, nloc, nb.getF32Type(), element);
            auto [m, s] = combine(nb, nloc, args[1], args[2], element, {});
            linalg::YieldOp::create(nb, nloc, ValueRange{m, s});
          });
      // The lanes' pairs in lane order, onto the maximum's init and zero.
      AffineMap lanesAll = AffineMap::getMultiDimIdentityMap(n, ctx);
      AffineMap rowMap = lanesAll.getMajorSubMap(n - 1);
      SmallVector<utils::IteratorType> combineIterators(
          n - 1, utils::IteratorType::parallel);
      combineIterators.push_back(utils::IteratorType::reduction);
      Value sumInit = ga::zerosLike(b, loc, sum->getResult(0).getType());
      auto combined = linalg::GenericOp::create(
          b, loc, TypeRange{max->getResult(0).getType(), sumInit.getType()},
          ValueRange{partial.getResult(0), partial.getResult(1)},
          ValueRange{max.getDpsInits()[0], sumInit},
          ArrayRef<AffineMap>{lanesAll, lanesAll, rowMap, rowMap},
          combineIterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
            auto [m, s] = combine(nb, nloc, args[2], args[3], args[0], args[1]);
            linalg::YieldOp::create(nb, nloc, ValueRange{m, s});
          });
      rewriter.replaceOp(sum, combined.getResult(1));
      rewriter.replaceOp(max, combined.getResult(0));
    }
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
