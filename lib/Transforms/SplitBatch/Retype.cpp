//===- Retype.cpp - A split step's operations at a slice of the batch ----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-split-batch clones the step's body into the accumulate (or before
// it, for the globals) and re-types the clone in place, walking the
// original and the clone in lockstep: every per-example value (class from
// the decomposability analysis) gets its batch dimension divided by the
// factor, and the shape-carrying pieces follow (slice sizes, expand_shape
// output shapes, inits of destination-passing ops, broadcast inputs that
// are read along the batch). Each re-typed operation is verified alone, so
// that a split that cannot be re-typed names the operation.
//
//===----------------------------------------------------------------------===//

#include "Retype.h"

#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "train/TrainOps.h"

using namespace mlir;
using namespace ga;
using namespace ga::train;
using namespace ga::split_batch;

/// `type` with dimension `dim` divided by `factor`.
RankedTensorType ga::split_batch::divideDim(RankedTensorType type, int64_t dim,
                                            int64_t factor) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= factor;
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

/// The rows [offset, offset + B / parts) of `operand` along its dimension
/// `dim` (of size B).
Value ga::split_batch::takeRows(OpBuilder &b, Location loc, Value operand,
                                OpFoldResult offset, int64_t parts,
                                int64_t dim) {
  auto type = cast<RankedTensorType>(operand.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes;
  for (int64_t size : type.getShape())
    sizes.push_back(b.getIndexAttr(size));
  offsets[dim] = offset;
  sizes[dim] = b.getIndexAttr(type.getDimSize(dim) / parts);
  return tensor::ExtractSliceOp::create(b, loc, divideDim(type, dim, parts),
                                        operand, offsets, sizes, strides);
}

/// A value of type `want` built like `init` (an empty tensor, a fill of
/// one, a splat constant, a broadcast along the dimensions that change, or
/// an expand_shape of one of them) but with another shape; null if `init`
/// is built otherwise.
static Value reshapeInit(OpBuilder &b, Value init, RankedTensorType want) {
  if (init.getType() == want)
    return init;
  Location loc = init.getLoc();
  Operation *def = init.getDefiningOp();
  if (isa_and_nonnull<tensor::EmptyOp>(def))
    return tensor::EmptyOp::create(b, loc, want.getShape(),
                                   want.getElementType());
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(def)) {
    Value inner = reshapeInit(b, fill.getOutputs()[0], want);
    if (!inner)
      return {};
    return linalg::FillOp::create(b, loc, fill.getInputs()[0], inner)
        .getResult(0);
  }
  // An expanded init (a grouped convolution's bias broadcast, split into
  // [groups, channels]): the source's extents are the products of its
  // groups'.
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(def)) {
    SmallVector<int64_t> shape;
    for (const ReassociationIndices &group : expand.getReassociationIndices()) {
      int64_t size = 1;
      for (int64_t d : group)
        size *= want.getDimSize(d);
      shape.push_back(size);
    }
    Value inner =
        reshapeInit(b, expand.getSrc(),
                    RankedTensorType::get(shape, want.getElementType(),
                                          want.getEncoding()));
    if (!inner)
      return {};
    return tensor::ExpandShapeOp::create(b, loc, want, inner,
                                         expand.getReassociationIndices());
  }
  // A broadcast of a value without the batch (a convolution's bias
  // repeated over the batch's positions, its init), along every dimension
  // that changes.
  if (auto broadcast = dyn_cast_or_null<linalg::BroadcastOp>(def)) {
    auto have = cast<RankedTensorType>(init.getType());
    ArrayRef<int64_t> added = broadcast.getDimensions();
    for (int64_t d = 0; d < have.getRank(); ++d)
      if (have.getDimSize(d) != want.getDimSize(d) &&
          !llvm::is_contained(added, d))
        return {};
    Value inner = reshapeInit(b, broadcast.getInit(), want);
    if (!inner)
      return {};
    return linalg::BroadcastOp::create(b, loc, broadcast.getInput(), inner,
                                       added)
        ->getResult(0);
  }
  if (auto constant = dyn_cast_or_null<arith::ConstantOp>(def))
    if (auto splat = dyn_cast<SplatElementsAttr>(constant.getValue()))
      return arith::ConstantOp::create(
          b, loc,
          SplatElementsAttr::get(want, splat.getSplatValue<Attribute>()));
  return {};
}

/// Whether every slice of `v` along `dim` holds the same values: a value
/// computed without the batch but broadcast to its size (transformers'
/// causal mask expanded to [B, 1, S, S]), of which any rows are a
/// micro-batch's. Follows fills, splat constants, unit reshapes and
/// structured operations whose loop at `dim` only broadcasts.
static bool sameAlongDim(Value v, int64_t dim, unsigned depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 32)
    return false;
  if (isa<tensor::EmptyOp, linalg::FillOp>(def))
    return true;
  if (auto constant = dyn_cast<arith::ConstantOp>(def))
    return isa<SplatElementsAttr>(constant.getValue());
  // A reshape that keeps the dimension, with unit dimensions around it.
  auto throughGroup = [&](ArrayRef<ReassociationIndices> groups,
                          RankedTensorType expanded, bool toSource,
                          Value source) {
    for (auto [g, group] : llvm::enumerate(groups)) {
      if (toSource ? (int64_t)g != dim : !llvm::is_contained(group, dim))
        continue;
      // The dimensions of the group other than one must be units.
      int64_t wide = -1;
      for (int64_t d : group)
        if (expanded.getDimSize(d) != 1) {
          if (wide >= 0)
            return false;
          wide = d;
        }
      if (toSource)
        return wide >= 0 && sameAlongDim(source, wide, depth + 1);
      return wide == dim && sameAlongDim(source, g, depth + 1);
    }
    return false;
  };
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
    return throughGroup(collapse.getReassociationIndices(),
                        collapse.getSrcType(), /*toSource=*/true,
                        collapse.getSrc());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
    return throughGroup(expand.getReassociationIndices(),
                        expand.getResultType(), /*toSource=*/false,
                        expand.getSrc());
  auto linalgOp = dyn_cast<linalg::LinalgOp>(def);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics())
    return false;
  OpOperand *init =
      linalgOp.getDpsInitOperand(cast<OpResult>(v).getResultNumber());
  auto loop = dyn_cast<AffineDimExpr>(
      linalgOp.getMatchingIndexingMap(init).getResult(dim));
  if (!loop)
    return false;
  unsigned d = loop.getPosition();
  bool indexed = false;
  linalgOp->walk(
      [&](linalg::IndexOp index) { indexed |= index.getDim() == d; });
  if (indexed)
    return false;
  for (OpOperand &operand : linalgOp->getOpOperands()) {
    if (&operand != init && linalgOp.isDpsInit(&operand))
      continue;
    if (&operand == init && !linalgOp.payloadUsesValueFromOperand(init))
      continue;
    AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
    for (auto [p, expr] : llvm::enumerate(map.getResults())) {
      if (!expr.isFunctionOfDim(d))
        continue;
      if (expr != loop || !sameAlongDim(operand.get(), p, depth + 1))
        return false;
    }
  }
  return true;
}

/// The loop of `op` over the batch: the one that indexes the batch
/// dimension of its per-example operands.
static std::optional<unsigned> batchLoopOf(linalg::LinalgOp op,
                                           const Decomposability &analysis) {
  for (OpOperand &operand : op->getOpOperands()) {
    BatchClass c = analysis.get(operand.get());
    if (c.kind != BatchClass::PerExample)
      continue;
    if (auto dim = dyn_cast<AffineDimExpr>(
            op.getMatchingIndexingMap(&operand).getResult(c.batchDim)))
      return dim.getPosition();
  }
  return std::nullopt;
}

/// The inputs of `clone` (re-typed from the structured op `original`)
/// that do not depend on the batch but have its size where the batch loop
/// reads them: the first rows of each, which are every row's values.
static LogicalResult sliceBroadcastInputs(linalg::LinalgOp original,
                                          Operation *clone,
                                          const Decomposability &analysis,
                                          int64_t factor, OpBuilder &b) {
  std::optional<unsigned> loop = batchLoopOf(original, analysis);
  if (!loop)
    return success();
  AffineExpr batch = getAffineDimExpr(*loop, original->getContext());
  for (OpOperand *input : original.getDpsInputOperands()) {
    if (!isa<RankedTensorType>(input->get().getType()) ||
        analysis.get(input->get()).kind == BatchClass::PerExample)
      continue;
    std::optional<unsigned> pos =
        original.getMatchingIndexingMap(input).getResultPosition(batch);
    if (!pos)
      continue;
    if (!sameAlongDim(input->get(), *pos))
      return original->emitError()
             << "cannot split: operand #" << input->getOperandNumber()
             << " of this operation does not depend on the batch but has "
                "the batch's size in its dimension "
             << *pos
             << ", and its rows differ: a micro-batch cannot tell which of "
                "them are its own";
    OpOperand &operand = clone->getOpOperand(input->getOperandNumber());
    operand.set(takeRows(b, clone->getLoc(), operand.get(), b.getIndexAttr(0),
                         factor, *pos));
  }
  return success();
}

/// Whether `op`'s regions hold ops that retype() re-types (a
/// train.checkpoint; not a linalg op's scalar body).
static bool holdsRetypedOps(Operation *op) {
  return op->getNumRegions() > 0 && !isa<DestinationStyleOpInterface>(op);
}

/// Verifies `clone` (re-typed from `original`) alone, or says why the split
/// fails.
static LogicalResult verifyClone(Operation *original, Operation *clone,
                                 int64_t factor) {
  if (succeeded(verify(clone, /*verifyRecursively=*/false)))
    return success();
  return original->emitError()
         << "cannot split: this operation could not be re-typed for a slice "
            "of the batch with "
         << factor << " times fewer rows (see the error above)";
}

LogicalResult ga::split_batch::retype(Operation *original, Operation *clone,
                                      const Decomposability &analysis,
                                      int64_t factor) {
  bool changed = false;
  OpBuilder b(clone);
  for (auto [orig, result] :
       llvm::zip(original->getResults(), clone->getResults())) {
    BatchClass c = analysis.get(orig);
    if (c.kind != BatchClass::PerExample)
      continue;
    auto type = cast<RankedTensorType>(orig.getType());
    if (type.getDimSize(c.batchDim) % factor != 0)
      return original->emitError()
             << "cannot split: dimension " << c.batchDim << " of " << type
             << " (the batch dimension here) is not divisible by " << factor;
    result.setType(divideDim(type, c.batchDim, factor));
    changed = true;
  }
  // Block arguments of region ops (train.checkpoint) that stand for
  // per-example operands take the slice's type too.
  for (auto [origRegion, cloneRegion] :
       llvm::zip(original->getRegions(), clone->getRegions()))
    for (auto [origBlock, cloneBlock] : llvm::zip(origRegion, cloneRegion))
      for (auto [origArg, arg] :
           llvm::zip(origBlock.getArguments(), cloneBlock.getArguments())) {
        BatchClass c = analysis.get(origArg);
        auto type = dyn_cast<RankedTensorType>(origArg.getType());
        if (c.kind != BatchClass::PerExample || !type)
          continue;
        if (type.getDimSize(c.batchDim) % factor != 0)
          return original->emitError()
                 << "cannot split: dimension " << c.batchDim << " of " << type
                 << " (the batch dimension of region argument #"
                 << origArg.getArgNumber() << ") is not divisible by "
                 << factor;
        arg.setType(divideDim(type, c.batchDim, factor));
        changed = true;
      }
  // Inits of destination-passing ops take the new result types.
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(clone)) {
    for (OpOperand &init : dps.getDpsInitsMutable()) {
      OpResult result = dps.getTiedOpResult(&init);
      auto want = dyn_cast<RankedTensorType>(result.getType());
      if (!want || init.get().getType() == want)
        continue;
      Value reshaped = reshapeInit(b, init.get(), want);
      if (!reshaped)
        return original->emitError()
               << "cannot split: the init of this operation does not come "
                  "from tensor.empty, linalg.fill, a splat constant or a "
                  "broadcast along the batch, so it cannot be re-typed to a "
                  "slice of the batch";
      init.set(reshaped);
    }
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(clone)) {
    BatchClass c =
        analysis.get(cast<tensor::ExtractSliceOp>(original).getSource());
    if (c.kind == BatchClass::PerExample) {
      SmallVector<int64_t> sizes(slice.getStaticSizes());
      sizes[c.batchDim] /= factor;
      slice.setStaticSizes(sizes);
      changed = true;
    }
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(clone)) {
    BatchClass c =
        analysis.get(cast<tensor::InsertSliceOp>(original).getDest());
    if (c.kind == BatchClass::PerExample) {
      SmallVector<int64_t> sizes(insert.getStaticSizes());
      sizes[c.batchDim] /= factor;
      insert.setStaticSizes(sizes);
      changed = true;
    }
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(clone))
    expand.setStaticOutputShape(expand.getResultType().getShape());
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(original);
      linalgOp && changed &&
      failed(sliceBroadcastInputs(linalgOp, clone, analysis, factor, b)))
    return failure();
  // An op whose region holds the batch's values (train.checkpoint) is
  // verified once the ops of its region are re-typed too (verifyRetyped).
  if ((changed || isa<DestinationStyleOpInterface>(clone)) &&
      !holdsRetypedOps(clone))
    return verifyClone(original, clone, factor);
  return success();
}

/// Verifies the re-typed region ops among `clones` (as `originals`), inner
/// ones first: retype() checks them only after their regions.
LogicalResult ga::split_batch::verifyRetyped(ArrayRef<Operation *> originals,
                                             ArrayRef<Operation *> clones,
                                             int64_t factor) {
  for (auto [original, clone] :
       llvm::zip(llvm::reverse(originals), llvm::reverse(clones))) {
    if (holdsRetypedOps(clone) && failed(verifyClone(original, clone, factor)))
      return failure();
  }
  return success();
}

/// Operations of `block` (nested ones included) in pre-order.
SmallVector<Operation *> ga::split_batch::preorder(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    op.walk<WalkOrder::PreOrder>(
        [&](Operation *nested) { ops.push_back(nested); });
  return ops;
}

/// `op` and the operations nested in it, in pre-order.
SmallVector<Operation *> ga::split_batch::preorder(Operation *op) {
  SmallVector<Operation *> ops;
  op->walk<WalkOrder::PreOrder>(
      [&](Operation *nested) { ops.push_back(nested); });
  return ops;
}
