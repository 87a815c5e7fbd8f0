//===- TensorRules.cpp - Adjoints of tensor and train operations ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Shape operations move cotangents without arithmetic: the adjoint of a
// slice is an insertion into zeros (or an in-place addition into the
// adjoint accumulated so far), that of an insertion is a slice, that of a
// concatenation is a slice per input, and expand/collapse invert each
// other; a padding's adjoint is the slice of the padded cotangent that the
// source fills (the padding value is a constant). train.cross_entropy gets
// train.cross_entropy_grad, and train.attention train.attention_grad.
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "train/TrainOps.h"

using namespace mlir;

namespace ga::ad {

bool hasTensorRule(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp,
             tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::PadOp,
             train::CrossEntropyOp, train::AttentionOp>(op);
}

/// train.attention_grad, from the cotangents of the output and of the
/// log-sum-exp (either may be absent: the output's is then zero).
static LogicalResult adjointAttention(train::AttentionOp op, Sweep &sweep) {
  OpBuilder &b = sweep.builder;
  Location loc = op.getLoc();
  Value dout = sweep.getAdjoint(op.getOut());
  Value dlse = sweep.getAdjoint(op.getLse());
  if (!dout && !dlse)
    return success();
  if (!dout)
    dout = zerosLike(b, loc, op.getOut().getType());
  auto grad = train::AttentionGradOp::create(
      b, loc,
      TypeRange{op.getQuery().getType(), op.getKey().getType(),
                op.getValue().getType()},
      op.getQuery(), op.getKey(), op.getValue(), op.getOut(), op.getLse(), dout,
      dlse, op.getKeyMask(), op.getScaleAttr(), op.getCausalAttr(),
      op.getMaskedScoreAttr(), op.getKeyTileAttr(), op.getQueryTileAttr());
  Value operands[] = {op.getQuery(), op.getKey(), op.getValue()};
  for (auto [operand, gradient] : llvm::zip(operands, grad.getResults()))
    if (sweep.isActive(operand))
      sweep.addAdjoint(loc, operand, gradient);
  return success();
}

/// A constant padding: the source's adjoint is the slice of the result's
/// that the source fills.
static LogicalResult adjointPad(tensor::PadOp pad, Value dy, Sweep &sweep) {
  OpBuilder &b = sweep.builder;
  Location loc = pad.getLoc();
  Value padding = pad.getConstantPaddingValue();
  if (!padding || sweep.isActive(padding))
    return pad->emitOpError()
           << "cannot be differentiated: its padding value is not a "
              "constant";
  auto sourceType = pad.getSourceType();
  if (!sourceType.hasStaticShape() ||
      llvm::any_of(pad.getStaticLow(), [](int64_t l) { return l < 0; }))
    return pad->emitOpError()
           << "cannot be differentiated: its source or its low padding "
              "is not static";
  if (sweep.isActive(pad.getSource())) {
    SmallVector<OpFoldResult> offsets, sizes,
        strides(sourceType.getRank(), b.getIndexAttr(1));
    for (int64_t low : pad.getStaticLow())
      offsets.push_back(b.getIndexAttr(low));
    for (int64_t size : sourceType.getShape())
      sizes.push_back(b.getIndexAttr(size));
    sweep.addAdjoint(loc, pad.getSource(),
                     tensor::ExtractSliceOp::create(b, loc, sourceType, dy,
                                                    offsets, sizes, strides));
  }
  return success();
}

LogicalResult adjointTensorOp(Operation *op, Sweep &sweep) {
  OpBuilder &b = sweep.builder;
  Location loc = op->getLoc();
  if (auto attention = dyn_cast<train::AttentionOp>(op))
    return adjointAttention(attention, sweep);
  Value dy = sweep.getAdjoint(op->getResult(0));
  if (!dy)
    return success();

  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    sweep.addIntoSlice(loc, slice.getSource(), dy, slice);
    return success();
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    auto sourceType = cast<RankedTensorType>(insert.getSourceType());
    if (sweep.isActive(insert.getSource()))
      sweep.addAdjoint(loc, insert.getSource(),
                       tensor::ExtractSliceOp::create(
                           b, loc, sourceType, dy, insert.getMixedOffsets(),
                           insert.getMixedSizes(), insert.getMixedStrides()));
    if (sweep.isActive(insert.getDest()))
      sweep.addAdjoint(loc, insert.getDest(),
                       tensor::InsertSliceOp::create(
                           b, loc, zerosLike(b, loc, sourceType), dy,
                           insert.getMixedOffsets(), insert.getMixedSizes(),
                           insert.getMixedStrides()));
    return success();
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    return adjointPad(pad, dy, sweep);
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    // Input i is the slice of the result at the sum of the extents before
    // it along the concatenated dimension.
    int64_t dim = concat.getDim(), offset = 0;
    for (Value input : concat.getInputs()) {
      auto type = cast<RankedTensorType>(input.getType());
      if (sweep.isActive(input)) {
        SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
        SmallVector<OpFoldResult> sizes,
            strides(type.getRank(), b.getIndexAttr(1));
        offsets[dim] = b.getIndexAttr(offset);
        for (int64_t size : type.getShape())
          sizes.push_back(b.getIndexAttr(size));
        sweep.addAdjoint(loc, input,
                         tensor::ExtractSliceOp::create(
                             b, loc, type, dy, offsets, sizes, strides));
      }
      offset += type.getDimSize(dim);
    }
    return success();
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    sweep.addAdjoint(
        loc, expand.getSrc(),
        tensor::CollapseShapeOp::create(b, loc, expand.getSrcType(), dy,
                                        expand.getReassociationIndices()));
    return success();
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    sweep.addAdjoint(
        loc, collapse.getSrc(),
        tensor::ExpandShapeOp::create(b, loc, collapse.getSrcType(), dy,
                                      collapse.getReassociationIndices()));
    return success();
  }
  if (auto ce = dyn_cast<train::CrossEntropyOp>(op)) {
    sweep.addAdjoint(loc, ce.getLogits(),
                     train::CrossEntropyGradOp::create(
                         b, loc, ce.getLogits().getType(), ce.getLogits(),
                         ce.getLabels(), dy, ce.getReductionAttr(),
                         ce.getIgnoreIndexAttr()));
    // The sum continues its init: d loss / d init = 1.
    if (Value init = ce.getInit())
      sweep.addAdjoint(loc, init, dy);
    return success();
  }
  return op->emitOpError() << "has no adjoint rule";
}

} // namespace ga::ad
