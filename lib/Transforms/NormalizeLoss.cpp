//===- NormalizeLoss.cpp - Mean losses into sum + count -------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/NormalizeLoss.h"
#include "ga/Transforms/Passes.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/IR/AffineMap.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINNORMALIZELOSSPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;
using ga::convertScalar;
using ga::filledTensor;
using ga::mapScalars;

/// The number of labels different from `ignoreIndex`, as a 0-d tensor of
/// `element` (an integer or float type).
static Value countValidLabels(OpBuilder &b, Location loc, Value labels,
                              int64_t ignoreIndex, Type element) {
  auto labelsType = cast<RankedTensorType>(labels.getType());
  auto type = RankedTensorType::get({}, element);
  Value init = filledTensor(b, loc, {}, b.getZeroAttr(element));
  unsigned rank = labelsType.getRank();
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  bool isFloat = isa<FloatType>(element);
  auto op = linalg::GenericOp::create(
      b, loc, type, labels, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value ignore = arith::ConstantOp::create(
            nb, nloc, nb.getIntegerAttr(args[0].getType(), ignoreIndex));
        Value valid = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ne,
                                            args[0], ignore);
        TypedAttr oneAttr = isFloat ? TypedAttr(nb.getFloatAttr(element, 1.0))
                                    : TypedAttr(nb.getIntegerAttr(element, 1));
        Value one = arith::ConstantOp::create(nb, nloc, oneAttr);
        Value none = arith::ConstantOp::create(
            nb, nloc, cast<TypedAttr>(nb.getZeroAttr(element)));
        Value term = arith::SelectOp::create(nb, nloc, valid, one, none);
        Value sum =
            isFloat
                ? arith::AddFOp::create(nb, nloc, args[1], term).getResult()
                : arith::AddIOp::create(nb, nloc, args[1], term).getResult();
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return op.getResult(0);
}

/// `count` (0-d float) converted to the 0-d tensor type `type`.
static Value convertCount(OpBuilder &b, Location loc, Value count,
                          RankedTensorType type) {
  if (count.getType() == type)
    return count;
  Type element = type.getElementType();
  return mapScalars(b, loc, count, element,
                    [&](OpBuilder &nb, Location nloc, ValueRange args) {
                      return convertScalar(nb, nloc, args[0], element);
                    });
}

/// A copy of `ce` (before it) with the reduction `reduction` and no count
/// result.
static CrossEntropyOp cloneWithoutCount(OpBuilder &b, CrossEntropyOp ce,
                                        Reduction reduction) {
  OperationState state(ce.getLoc(), ce->getName());
  state.addOperands(ce->getOperands());
  state.addAttributes(ce->getAttrs());
  state.addTypes(ce.getLoss().getType());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ce);
  auto copy = cast<CrossEntropyOp>(b.create(state));
  copy.setReduction(reduction);
  return copy;
}

LogicalResult ga::normalizeLosses(StepOp step, bool means) {
  SmallVector<CrossEntropyOp> targets;
  step.getBody().walk([&](CrossEntropyOp ce) {
    if ((means && ce.getReduction() == Reduction::Mean) || ce.getCount())
      targets.push_back(ce);
  });
  for (CrossEntropyOp ce : targets) {
    OpBuilder b(ce);
    Location loc = ce.getLoc();
    auto lossType = cast<RankedTensorType>(ce.getLoss().getType());
    auto element = dyn_cast<FloatType>(lossType.getElementType());
    if (!element)
      return ce.emitError()
             << "the loss type " << lossType << " is not a float tensor";
    int64_t ignoreIndex = static_cast<int64_t>(ce.getIgnoreIndex());
    bool normalize = means && ce.getReduction() == Reduction::Mean;
    if (!normalize) {
      // Only the count: read from the labels alone, so that a split can
      // compute it before the micro-batches without the logits.
      Value oldCount = ce.getCount();
      auto countType = cast<RankedTensorType>(oldCount.getType());
      oldCount.replaceAllUsesWith(countValidLabels(
          b, loc, ce.getLabels(), ignoreIndex, countType.getElementType()));
      ce.getLoss().replaceAllUsesWith(
          cloneWithoutCount(b, ce, ce.getReduction()).getLoss());
      ce.erase();
      continue;
    }
    Value count =
        countValidLabels(b, loc, ce.getLabels(), ignoreIndex, element);
    CrossEntropyOp sum = cloneWithoutCount(b, ce, Reduction::Sum);
    // sum / max(count, 1): 0 when no label is valid, as the mean.
    Value loss = mapScalars(
        b, loc, ValueRange{sum.getLoss(), count}, element,
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value one = arith::ConstantOp::create(nb, nloc,
                                                nb.getFloatAttr(element, 1.0));
          Value divisor = arith::MaximumFOp::create(nb, nloc, args[1], one);
          return arith::DivFOp::create(nb, nloc, args[0], divisor).getResult();
        });
    ce.getLoss().replaceAllUsesWith(loss);
    if (Value oldCount = ce.getCount())
      oldCount.replaceAllUsesWith(convertCount(
          b, loc, count, cast<RankedTensorType>(oldCount.getType())));
    ce.erase();
  }
  return success();
}

namespace {
struct TrainNormalizeLossPass
    : ga::impl::TrainNormalizeLossPassBase<TrainNormalizeLossPass> {
  using Base::Base;

  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](StepOp step) {
      return failed(ga::normalizeLosses(step, /*means=*/true))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
