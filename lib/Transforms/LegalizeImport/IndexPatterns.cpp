//===- IndexPatterns.cpp - ga-legalize-import: indices --------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Iotas, loop gathers and the bounds checks of loop indices
// (LegalizeImport.cpp lists what each removes).
//
//===----------------------------------------------------------------------===//

#include "Rewrites.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace ga::legalize;

namespace {

/// Whether `value` is an iota: a generic that writes each element's own
/// index along one loop (`arange`) or a constant that holds them, possibly
/// reshaped by unit dimensions;
/// sets `element` to an element's value as a function of its indices.
bool isIota(Value value, AffineExpr &element) {
  AffineMap reshape = peelUnitReshapes(value);
  // A constant that holds its indices along one dimension (a buffer of
  // position ids).
  DenseIntElementsAttr constant;
  if (matchPattern(value, m_Constant(&constant))) {
    auto type = cast<RankedTensorType>(constant.getType());
    if (!type.hasStaticShape() || type.getNumElements() > (1 << 20))
      return false;
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<APInt> values(constant.getValues<APInt>());
    for (int64_t dim = 0; dim < type.getRank(); ++dim) {
      // The stride of `dim` in the row-major order of the elements.
      int64_t stride = 1;
      for (int64_t d = dim + 1; d < type.getRank(); ++d)
        stride *= shape[d];
      bool holds = llvm::all_of(llvm::enumerate(values), [&](auto e) {
        return e.value().getSExtValue() ==
               static_cast<int64_t>(e.index()) / stride % shape[dim];
      });
      if (holds) {
        element = reshape.getResult(dim);
        return true;
      }
    }
    return false;
  }
  auto producer = value.getDefiningOp<linalg::GenericOp>();
  if (!producer || producer->getNumResults() != 1 ||
      producer.getNumDpsInputs() != 0 || !producer.hasPureTensorSemantics())
    return false;
  Block &body = producer.getRegion().front();
  Value yielded = body.getTerminator()->getOperand(0);
  if (auto cast = yielded.getDefiningOp<arith::IndexCastOp>())
    yielded = cast.getIn();
  auto index = yielded.getDefiningOp<linalg::IndexOp>();
  if (!index)
    return false;
  AffineMap out = producer.getIndexingMapsArray()[0];
  if (!out.isPermutation())
    return false;
  unsigned dim = inversePermutation(out).getDimPosition(index.getDim());
  element = reshape.getResult(dim);
  return true;
}

/// Inputs that are iotas: the loop index itself, in the body.
struct IotaInputsAsIndices : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    return replaceInputsInBody(
        op, rewriter, [&](OpOperand &input, BlockArgument arg) -> Value {
          AffineMap map = op.getMatchingIndexingMap(&input);
          AffineExpr element;
          if (!isIota(input.get(), element) ||
              !isa<IntegerType, IndexType>(arg.getType()))
            return {};
          // The element's value at the loops' indices.
          AffineExpr atLoops = AffineMap::get(map.getNumResults(), 0, element)
                                   .compose(map)
                                   .getResult(0);
          Location loc = arg.getLoc();
          Value index;
          if (auto dim = dyn_cast<AffineDimExpr>(atLoops))
            index = linalg::IndexOp::create(rewriter, loc, dim.getPosition());
          else if (auto constant = dyn_cast<AffineConstantExpr>(atLoops))
            index = arith::ConstantIndexOp::create(rewriter, loc,
                                                   constant.getValue());
          else
            return {};
          if (!arg.getType().isIndex())
            index =
                arith::IndexCastOp::create(rewriter, loc, arg.getType(), index);
          return index;
        });
  }
};

/// The loop whose index `value` is, through integer casts and the wrap of
/// negative indices (`x < 0 ? x + n : x`, which a loop index never takes).
std::optional<unsigned> loopIndexOf(Value value) {
  while (true) {
    if (auto cast = value.getDefiningOp<arith::IndexCastOp>()) {
      value = cast.getIn();
      continue;
    }
    if (auto select = value.getDefiningOp<arith::SelectOp>()) {
      auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
      auto add = select.getTrueValue().getDefiningOp<arith::AddIOp>();
      Value x = select.getFalseValue();
      if (cmp && add && cmp.getPredicate() == arith::CmpIPredicate::slt &&
          cmp.getLhs() == x && matchPattern(cmp.getRhs(), m_Zero()) &&
          (add.getLhs() == x || add.getRhs() == x)) {
        value = x;
        continue;
      }
      return std::nullopt;
    }
    if (auto index = value.getDefiningOp<linalg::IndexOp>())
      return index.getDim();
    return std::nullopt;
  }
}

/// A tensor.extract in a body at loop indices only: a read of that tensor
/// through a map (sliced to the loops' extents).
struct GatherAtLoopIndices : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    Block &body = op.getRegion().front();
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    for (Operation &o : body.without_terminator()) {
      auto extract = dyn_cast<tensor::ExtractOp>(&o);
      if (!extract || extract.getTensor().getParentRegion() == &op.getRegion())
        continue;
      auto type = extract.getTensor().getType();
      if (!type.hasStaticShape())
        continue;
      SmallVector<AffineExpr> exprs;
      SmallVector<int64_t> sizes;
      bool ok = true;
      for (auto [d, index] : llvm::enumerate(extract.getIndices())) {
        std::optional<unsigned> loop = loopIndexOf(index);
        if (!loop || ShapedType::isDynamic(extents[*loop]) ||
            extents[*loop] > type.getDimSize(d) ||
            llvm::is_contained(exprs, rewriter.getAffineDimExpr(*loop))) {
          ok = false;
          break;
        }
        exprs.push_back(rewriter.getAffineDimExpr(*loop));
        sizes.push_back(extents[*loop]);
      }
      if (!ok)
        continue;
      Location loc = extract.getLoc();
      rewriter.setInsertionPoint(op);
      Value source = extract.getTensor();
      if (ArrayRef<int64_t>(sizes) != type.getShape()) {
        SmallVector<OpFoldResult> offsets(sizes.size(),
                                          rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> strides(sizes.size(),
                                          rewriter.getIndexAttr(1));
        SmallVector<OpFoldResult> sliceSizes;
        for (int64_t size : sizes)
          sliceSizes.push_back(rewriter.getIndexAttr(size));
        source = tensor::ExtractSliceOp::create(rewriter, loc, source, offsets,
                                                sliceSizes, strides);
      }
      unsigned numInputs = op.getNumDpsInputs();
      BlockArgument arg =
          body.insertArgument(numInputs, type.getElementType(), loc);
      rewriter.replaceAllUsesWith(extract.getResult(), arg);
      rewriter.eraseOp(extract);
      SmallVector<Value> inputs(op.getDpsInputs());
      inputs.push_back(source);
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      maps.insert(maps.begin() + numInputs,
                  AffineMap::get(op.getNumLoops(), 0, exprs, getContext()));
      linalg::GenericOp generic =
          rebuildGeneric(rewriter, op, inputs, op.getDpsInits(), maps);
      rewriter.replaceOp(op, generic.getResults());
      return success();
    }
    return failure();
  }
};

/// Comparisons of a loop index with a constant that the loop's extent
/// decides (the bounds checks of gathers at loop indices): constants.
struct FoldLoopIndexBounds : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    bool changed = false;
    op.getRegion().walk([&](arith::CmpIOp cmp) {
      std::optional<unsigned> loop = loopIndexOf(cmp.getLhs());
      APInt bound;
      if (!loop || ShapedType::isDynamic(extents[*loop]) ||
          !matchPattern(cmp.getRhs(), m_ConstantInt(&bound)))
        return;
      // The index lies in [0, extent - 1].
      int64_t c = bound.getSExtValue(), high = extents[*loop] - 1;
      std::optional<bool> value;
      switch (cmp.getPredicate()) {
      case arith::CmpIPredicate::slt:
        if (high < c)
          value = true;
        else if (c <= 0)
          value = false;
        break;
      case arith::CmpIPredicate::sge:
        if (c <= 0)
          value = true;
        else if (high < c)
          value = false;
        break;
      case arith::CmpIPredicate::ult:
        if (c > 0 && high < c)
          value = true;
        break;
      default:
        break;
      }
      if (!value)
        return;
      rewriter.setInsertionPoint(cmp);
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          cmp, rewriter.getBoolAttr(*value));
      changed = true;
    });
    return success(changed);
  }
};

/// tensor.extract from a splat (a generic without inputs that yields one
/// value defined above it, or linalg.fill) is that value: a gather from a
/// zero buffer expanded over the batch (transformers' default
/// token_type_ids, read at the batch loop's index) then reads no position
/// within the batch.
struct ExtractFromSplat : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractOp extract,
                                PatternRewriter &rewriter) const override {
    Operation *def = extract.getTensor().getDefiningOp();
    Value splat;
    if (auto fill = dyn_cast_or_null<linalg::FillOp>(def)) {
      splat = fill.getInputs()[0];
    } else if (auto generic = dyn_cast_or_null<linalg::GenericOp>(def)) {
      if (generic.getNumDpsInputs() != 0 || generic.getNumResults() != 1)
        return failure();
      Block &body = generic.getRegion().front();
      Value yielded = body.getTerminator()->getOperand(0);
      // Defined above the generic (not in its body, not a block argument).
      if (yielded.getParentRegion() == &generic.getRegion())
        return failure();
      splat = yielded;
    }
    if (!splat || splat.getType() != extract.getType())
      return failure();
    // The splat dominates the generic that reads it, which dominates the
    // extract of its result.
    rewriter.replaceOp(extract, splat);
    return success();
  }
};

/// tensor.extract from a broadcast (an all-parallel generic that yields its
/// one input, read through a projected permutation, into an identity
/// output) reads the input at the indices the broadcast keeps: a class
/// weight of cross-entropy, broadcast over the batch's rows and gathered at
/// (row, label), then reads the label alone and not the row's position
/// within the batch.
struct ExtractFromBroadcast : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractOp extract,
                                PatternRewriter &rewriter) const override {
    auto generic = extract.getTensor().getDefiningOp<linalg::GenericOp>();
    if (!generic || generic.getNumDpsInputs() != 1 ||
        generic.getNumResults() != 1 ||
        generic.getNumParallelLoops() != generic.getNumLoops())
      return failure();
    Block &body = generic.getRegion().front();
    if (body.getTerminator()->getOperand(0) != body.getArgument(0))
      return failure();
    OpOperand *input = generic.getDpsInputOperand(0);
    if (!isa<RankedTensorType>(input->get().getType()))
      return failure();
    AffineMap inputMap = generic.getMatchingIndexingMap(input);
    AffineMap outputMap =
        generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
    if (!outputMap.isIdentity() || !inputMap.isProjectedPermutation())
      return failure();
    SmallVector<Value> indices;
    for (AffineExpr expr : inputMap.getResults())
      indices.push_back(
          extract.getIndices()[cast<AffineDimExpr>(expr).getPosition()]);
    rewriter.replaceOpWithNewOp<tensor::ExtractOp>(extract, input->get(),
                                                   indices);
    return success();
  }
};

} // namespace

void ga::legalize::populateIndexPatterns(RewritePatternSet &patterns) {
  patterns.add<IotaInputsAsIndices, GatherAtLoopIndices, FoldLoopIndexBounds,
               ExtractFromSplat, ExtractFromBroadcast>(patterns.getContext());
}
