//===- ScalarRules.cpp - Reverse mode over linalg.generic bodies -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The derivative rules of the scalar arith/math operations that linalg
// bodies are made of. Every adjoint of a linalg.generic is built from these:
// the body is recomputed in the adjoint's body and swept backwards.
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;

namespace ga::ad {

static bool isSkipped(Operation *op, ArrayRef<Operation *> skip) {
  return llvm::is_contained(skip, op);
}

void ScalarReverse::recompute(Block &body, ArrayRef<Operation *> skip) {
  for (Operation &op : body.without_terminator()) {
    if (isSkipped(&op, skip) ||
        llvm::all_of(op.getResults(),
                     [&](Value r) { return map.contains(r); }))
      continue;
    b.clone(op, map);
  }
}

void ScalarReverse::seed(Value orig, Value c) {
  if (!c || !isa<FloatType>(orig.getType()))
    return;
  Value &slot = cot[orig];
  slot = slot ? arith::AddFOp::create(b, c.getLoc(), slot, c).getResult() : c;
}

namespace {
/// Builds the arithmetic of one rule at one location.
struct Emit {
  OpBuilder &b;
  Location loc;
  Type type;

  Value cst(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
};
} // namespace

LogicalResult ScalarReverse::run(Block &body, ArrayRef<Operation *> skip) {
  for (Operation &opRef : llvm::reverse(body.without_terminator())) {
    Operation *op = &opRef;
    if (isSkipped(op, skip) || op->getNumResults() != 1)
      continue;
    Value result = op->getResult(0);
    Value c = cot.lookup(result);
    if (!c)
      continue;
    if (llvm::none_of(op->getOperandTypes(),
                      [](Type t) { return isa<FloatType>(t); }))
      continue; // constants, int-to-float casts, tensor.extract: leaves.

    auto in = [&](unsigned i) { return op->getOperand(i); };
    auto fwd = [&](Value v) { return map.lookupOrDefault(v); };
    Emit e{b, op->getLoc(), result.getType()};
    Value r = fwd(result);

    if (isa<arith::AddFOp>(op)) {
      seed(in(0), c);
      seed(in(1), c);
    } else if (isa<arith::SubFOp>(op)) {
      seed(in(0), c);
      seed(in(1), e.neg(c));
    } else if (isa<arith::MulFOp>(op)) {
      seed(in(0), e.mul(c, fwd(in(1))));
      seed(in(1), e.mul(c, fwd(in(0))));
    } else if (isa<arith::DivFOp>(op)) {
      // r = x / y: dx = c / y, dy = -c * r / y.
      seed(in(0), e.div(c, fwd(in(1))));
      seed(in(1), e.neg(e.div(e.mul(c, r), fwd(in(1)))));
    } else if (isa<arith::NegFOp>(op)) {
      seed(in(0), e.neg(c));
    } else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
                   arith::MinNumFOp>(op)) {
      // Ties send the whole cotangent to the first operand.
      bool isMax = isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
      Value first = e.cmp(isMax ? arith::CmpFPredicate::OGE
                                : arith::CmpFPredicate::OLE,
                          fwd(in(0)), fwd(in(1)));
      Value zero = e.cst(0.0);
      seed(in(0), e.select(first, c, zero));
      seed(in(1), e.select(first, zero, c));
    } else if (auto select = dyn_cast<arith::SelectOp>(op)) {
      Value cond = fwd(select.getCondition());
      Value zero = e.cst(0.0);
      seed(select.getTrueValue(), e.select(cond, c, zero));
      seed(select.getFalseValue(), e.select(cond, zero, c));
    } else if (isa<arith::ExtFOp>(op)) {
      seed(in(0), arith::TruncFOp::create(b, op->getLoc(), in(0).getType(), c));
    } else if (isa<arith::TruncFOp>(op)) {
      seed(in(0), arith::ExtFOp::create(b, op->getLoc(), in(0).getType(), c));
    } else if (isa<math::ExpOp>(op)) {
      seed(in(0), e.mul(c, r));
    } else if (isa<math::LogOp>(op)) {
      seed(in(0), e.div(c, fwd(in(0))));
    } else if (isa<math::TanhOp>(op)) {
      seed(in(0), e.mul(c, e.sub(e.cst(1.0), e.mul(r, r))));
    } else if (isa<math::SqrtOp>(op)) {
      seed(in(0), e.div(e.mul(c, e.cst(0.5)), r));
    } else if (isa<math::RsqrtOp>(op)) {
      // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 r / x.
      seed(in(0), e.mul(e.mul(c, e.cst(-0.5)), e.div(r, fwd(in(0)))));
    } else if (isa<math::ErfOp>(op)) {
      Value x = fwd(in(0));
      Value g = math::ExpOp::create(b, op->getLoc(), e.neg(e.mul(x, x)));
      seed(in(0), e.mul(c, e.mul(e.cst(2.0 / std::sqrt(M_PI)), g)));
    } else if (isa<math::PowFOp>(op)) {
      Value x = fwd(in(0)), y = fwd(in(1));
      Value pm1 = math::PowFOp::create(b, op->getLoc(), x,
                                       e.sub(y, e.cst(1.0)));
      seed(in(0), e.mul(c, e.mul(y, pm1)));
      if (isa<BlockArgument>(in(1)) || !matchPattern(in(1), m_Constant()))
        seed(in(1),
             e.mul(c, e.mul(r, math::LogOp::create(b, op->getLoc(), x))));
    } else if (isa<math::AbsFOp>(op)) {
      Value pos = e.cmp(arith::CmpFPredicate::OGE, fwd(in(0)), e.cst(0.0));
      seed(in(0), e.select(pos, c, e.neg(c)));
    } else {
      return op->emitOpError()
             << "has no derivative rule: train-differentiate cannot "
                "differentiate a linalg.generic body through it";
    }
  }
  return success();
}

SmallVector<bool> scalarArgsNeeded(Block &body, ArrayRef<Operation *> skip,
                                   ArrayRef<Value> extraRoots) {
  SmallVector<Value> worklist(extraRoots);
  for (Operation &op : body.without_terminator()) {
    if (isSkipped(&op, skip))
      continue;
    if (isa<arith::MulFOp, arith::DivFOp, arith::MaximumFOp, arith::MaxNumFOp,
            arith::MinimumFOp, arith::MinNumFOp, math::ExpOp, math::LogOp,
            math::TanhOp, math::SqrtOp, math::RsqrtOp, math::ErfOp,
            math::PowFOp, math::AbsFOp, tensor::ExtractOp>(op))
      llvm::append_range(worklist, op.getOperands());
    else if (auto select = dyn_cast<arith::SelectOp>(op))
      worklist.push_back(select.getCondition());
  }
  SmallVector<bool> needed(body.getNumArguments(), false);
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &body)
        needed[arg.getArgNumber()] = true;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def && def->getBlock() == &body)
      llvm::append_range(worklist, def->getOperands());
  }
  return needed;
}

} // namespace ga::ad
