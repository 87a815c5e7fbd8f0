//===- NormalizeLoss.cpp - Mean losses into sum + count --------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

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
/// `element` (a float type).
static Value countValidLabels(OpBuilder &b, Location loc, Value labels,
                              int64_t ignoreIndex, FloatType element) {
  auto labelsType = cast<RankedTensorType>(labels.getType());
  auto type = RankedTensorType::get({}, element);
  Value init = filledTensor(b, loc, {}, b.getFloatAttr(element, 0.0));
  unsigned rank = labelsType.getRank();
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  auto op = linalg::GenericOp::create(
      b, loc, type, labels, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value ignore = arith::ConstantOp::create(
            nb, nloc, nb.getIntegerAttr(args[0].getType(), ignoreIndex));
        Value valid = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ne,
                                            args[0], ignore);
        Value one = arith::ConstantOp::create(
            nb, nloc, nb.getFloatAttr(element, 1.0));
        Value none = arith::ConstantOp::create(
            nb, nloc, nb.getFloatAttr(element, 0.0));
        Value term = arith::SelectOp::create(nb, nloc, valid, one, none);
        linalg::YieldOp::create(
            nb, nloc, arith::AddFOp::create(nb, nloc, args[1], term).getResult());
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

namespace {
struct TrainNormalizeLossPass
    : ga::impl::TrainNormalizeLossPassBase<TrainNormalizeLossPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<CrossEntropyOp> means;
    getOperation()->walk([&](StepOp step) {
      step.getBody().walk([&](CrossEntropyOp ce) {
        if (ce.getReduction() == Reduction::Mean)
          means.push_back(ce);
      });
    });
    for (CrossEntropyOp ce : means) {
      OpBuilder b(ce);
      Location loc = ce.getLoc();
      auto lossType = cast<RankedTensorType>(ce.getLoss().getType());
      auto element = dyn_cast<FloatType>(lossType.getElementType());
      if (!element) {
        ce.emitError() << "train-normalize-loss: the loss type " << lossType
                       << " is not a float tensor";
        return signalPassFailure();
      }
      Value count =
          countValidLabels(b, loc, ce.getLabels(),
                           static_cast<int64_t>(ce.getIgnoreIndex()), element);
      auto sum = cast<CrossEntropyOp>(b.clone(*ce));
      sum.setReduction(Reduction::Sum);
      // sum / max(count, 1): 0 when no label is valid, as the mean.
      Value loss = mapScalars(
          b, loc, ValueRange{sum.getLoss(), count}, element,
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value one = arith::ConstantOp::create(
                nb, nloc, nb.getFloatAttr(element, 1.0));
            Value divisor = arith::MaximumFOp::create(nb, nloc, args[1], one);
            return arith::DivFOp::create(nb, nloc, args[0], divisor)
                .getResult();
          });
      ce.getLoss().replaceAllUsesWith(loss);
      if (Value oldCount = ce.getCount())
        oldCount.replaceAllUsesWith(convertCount(
            b, loc, count, cast<RankedTensorType>(oldCount.getType())));
      ce.erase();
      // The sum's own count result is no longer read.
      if (sum.getCount()) {
        OperationState state(loc, sum->getName());
        state.addOperands(sum->getOperands());
        state.addAttributes(sum->getAttrs());
        state.addTypes(sum.getLoss().getType());
        b.setInsertionPoint(sum);
        Operation *plain = b.create(state);
        sum.getLoss().replaceAllUsesWith(plain->getResult(0));
        sum.erase();
      }
    }
  }
};
} // namespace
