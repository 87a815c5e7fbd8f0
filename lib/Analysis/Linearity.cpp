//===- Linearity.cpp - What linalg bodies read and how they scale --------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The facts about linalg operations that the decomposability analysis, the
// split and the remat planner share: the values an operation reads (its
// regions' captures included), how a body's yielded scalars depend on the
// batch-sums it reads (constant, proportional, or otherwise, from the
// scalar operations), whether an output is an additive reduction, and the
// work of an operation's iteration spaces.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/Decomposability.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace ga;

SmallVector<Value> ga::capturedValues(Operation *op) {
  SmallVector<Value> captured;
  op->walk([&](Operation *nested) {
    if (nested == op)
      return;
    for (Value v : nested->getOperands())
      if (!op->isAncestor(v.getParentBlock()->getParentOp()) &&
          !llvm::is_contained(captured, v))
        captured.push_back(v);
  });
  return captured;
}

SmallVector<Value> ga::readValues(Operation *op) {
  SmallVector<Value> values(op->getOperands());
  if (op->getNumRegions())
    llvm::append_range(values, capturedValues(op));
  return values;
}

Linearity ga::bodyLinearity(linalg::LinalgOp op,
                            const llvm::SmallDenseSet<Value> &sumArgs,
                            const llvm::SmallDenseSet<Value> &accumulators,
                            std::string &why) {
  llvm::DenseMap<Value, Linearity> lin;
  auto of = [&](Value v) {
    if (sumArgs.contains(v) || accumulators.contains(v))
      return Linearity::Proportional;
    auto it = lin.find(v);
    return it == lin.end() ? Linearity::Constant : it->second;
  };
  Block *body = op.getBlock();
  for (Operation &nested : body->without_terminator()) {
    Linearity result = Linearity::Constant;
    bool anyDependent = llvm::any_of(nested.getOperands(), [&](Value v) {
      return of(v) != Linearity::Constant;
    });
    if (llvm::any_of(nested.getOperands(),
                     [&](Value v) { return of(v) == Linearity::Other; })) {
      result = Linearity::Other;
    } else if (!anyDependent) {
      result = Linearity::Constant;
    } else if (isa<arith::AddFOp, arith::SubFOp>(nested)) {
      // A sum is proportional only if both terms are: adding a term that
      // does not scale with the batch would count it once per micro-batch,
      // unless it is zero (Python's sum() of losses starts from 0).
      auto zero = [&](Value v) {
        return of(v) == Linearity::Constant &&
               matchPattern(v, m_AnyZeroFloat());
      };
      if (of(nested.getOperand(0)) == of(nested.getOperand(1)) ||
          zero(nested.getOperand(0)) || zero(nested.getOperand(1)))
        result = Linearity::Proportional;
      else {
        result = Linearity::Other;
        why = "adds a term that does not depend on the batch to a "
              "parameter-dependent batch-sum ('" +
              nested.getName().getStringRef().str() +
              "'): a split would add it once per micro-batch";
      }
    } else if (isa<arith::NegFOp, arith::ExtFOp, arith::TruncFOp>(nested)) {
      result = Linearity::Proportional;
    } else if (isa<arith::MulFOp>(nested)) {
      if (of(nested.getOperand(0)) == Linearity::Constant ||
          of(nested.getOperand(1)) == Linearity::Constant)
        result = Linearity::Proportional;
      else {
        result = Linearity::Other;
        why = "multiplies two parameter-dependent batch-sums ('arith.mulf'): "
              "a product of sums is not the sum of the micro-batch products";
      }
    } else if (isa<arith::DivFOp>(nested)) {
      if (of(nested.getOperand(1)) == Linearity::Constant)
        result = Linearity::Proportional;
      else {
        result = Linearity::Other;
        why = "divides by a batch-sum that depends on the parameters "
              "('arith.divf'): a split would divide by each micro-batch's "
              "own sum";
      }
    } else {
      result = Linearity::Other;
      why = "applies '" + nested.getName().getStringRef().str() +
            "' to a batch-sum that depends on the parameters: a non-linear "
            "function of a sum is not the sum of the micro-batch values";
    }
    for (Value r : nested.getResults())
      lin[r] = result;
  }
  Linearity worst = Linearity::Constant;
  for (Value v : body->getTerminator()->getOperands())
    worst = std::max(worst, of(v));
  return worst;
}

bool ga::isAdditiveReduction(linalg::LinalgOp op, unsigned j) {
  if (op.getNumReductionLoops() == 0)
    return false;
  Block *body = op.getBlock();
  BlockArgument out = body->getArgument(op.getNumDpsInputs() + j);
  Operation *def = body->getTerminator()->getOperand(j).getDefiningOp();
  if (!def || !isa<arith::AddFOp, arith::AddIOp>(def) || !out.hasOneUse())
    return false;
  return def->getOperand(0) == out || def->getOperand(1) == out;
}

double ga::linalgWork(Operation *op) {
  double work = 0;
  op->walk([&](linalg::LinalgOp linalgOp) {
    double points = 1;
    for (int64_t range : linalgOp.getStaticLoopRanges())
      points *= ShapedType::isDynamic(range) ? 1 : range;
    work += linalgOp.getNumReductionLoops() ? 2 * points : points;
  });
  return work;
}
