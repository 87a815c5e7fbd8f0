//===- ScalarRules.cpp - Reverse mode over linalg.generic bodies ----------===//
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
        llvm::all_of(op.getResults(), [&](Value r) { return map.contains(r); }))
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

namespace {
/// The forward values a scalar rule reads besides the cotangent of the
/// result (bits).
enum Reads : unsigned {
  ReadsNothing = 0,
  ReadsOperands = 1,  ///< the operation's operands
  ReadsResult = 2,    ///< the operation's result (recomputed from operands)
  ReadsCondition = 4, ///< the condition of an arith.select
};

/// What one rule sees: the operation, its cotangent, and the forward values
/// through accessors that record what the rule read.
struct RuleContext {
  Operation *op;
  Value c;
  Emit e;
  IRMapping &map;
  ScalarReverse &sweep;
  unsigned read = ReadsNothing;

  /// The recomputed value of operand `i`.
  Value x(unsigned i) {
    read |= ReadsOperands;
    return map.lookupOrDefault(op->getOperand(i));
  }
  /// The recomputed result.
  Value r() {
    read |= ReadsResult;
    return map.lookupOrDefault(op->getResult(0));
  }
  /// The recomputed condition of an arith.select.
  Value condition() {
    read |= ReadsCondition;
    return map.lookupOrDefault(cast<arith::SelectOp>(op).getCondition());
  }
  /// cotangent(operand i) += value.
  void seed(unsigned i, Value value) { sweep.seed(op->getOperand(i), value); }
};

/// One derivative rule: what it reads and how it builds the operands'
/// cotangents. A null `build` marks an operation that is not differentiated
/// through but whose operands a recomputation needs (tensor.extract).
struct ScalarRule {
  unsigned reads;
  void (*build)(RuleContext &);
};

/// The scalar rules, by operation: the one definition of each rule and of
/// what it reads (scalarArgsNeeded derives the adjoint needs from it, and
/// ScalarReverse::run checks that a rule reads no more than it declares).
/// Over 100 lines on purpose: a table, one entry of a few lines per
/// operation, read in one place as the derivative rules of a textbook are
/// (splitting it by operation family would only scatter the table).
const llvm::DenseMap<TypeID, ScalarRule> &scalarRules() {
  static const llvm::DenseMap<TypeID, ScalarRule> rules = [] {
    llvm::DenseMap<TypeID, ScalarRule> t;
    t[TypeID::get<arith::AddFOp>()] = {ReadsNothing, [](RuleContext &k) {
                                         k.seed(0, k.c);
                                         k.seed(1, k.c);
                                       }};
    t[TypeID::get<arith::SubFOp>()] = {ReadsNothing, [](RuleContext &k) {
                                         k.seed(0, k.c);
                                         k.seed(1, k.e.neg(k.c));
                                       }};
    t[TypeID::get<arith::MulFOp>()] = {ReadsOperands, [](RuleContext &k) {
                                         k.seed(0, k.e.mul(k.c, k.x(1)));
                                         k.seed(1, k.e.mul(k.c, k.x(0)));
                                       }};
    // r = x / y: dx = c / y, dy = -c * r / y.
    t[TypeID::get<arith::DivFOp>()] = {
        ReadsOperands | ReadsResult, [](RuleContext &k) {
          k.seed(0, k.e.div(k.c, k.x(1)));
          k.seed(1, k.e.neg(k.e.div(k.e.mul(k.c, k.r()), k.x(1))));
        }};
    t[TypeID::get<arith::NegFOp>()] = {
        ReadsNothing, [](RuleContext &k) { k.seed(0, k.e.neg(k.c)); }};
    auto maxRule = [](RuleContext &k) {
      Value first = k.e.cmp(arith::CmpFPredicate::OGE, k.x(0), k.x(1));
      Value zero = k.e.cst(0.0);
      k.seed(0, k.e.select(first, k.c, zero));
      k.seed(1, k.e.select(first, zero, k.c));
    };
    auto minRule = [](RuleContext &k) {
      Value first = k.e.cmp(arith::CmpFPredicate::OLE, k.x(0), k.x(1));
      Value zero = k.e.cst(0.0);
      k.seed(0, k.e.select(first, k.c, zero));
      k.seed(1, k.e.select(first, zero, k.c));
    };
    t[TypeID::get<arith::MaximumFOp>()] = {ReadsOperands, maxRule};
    t[TypeID::get<arith::MaxNumFOp>()] = {ReadsOperands, maxRule};
    t[TypeID::get<arith::MinimumFOp>()] = {ReadsOperands, minRule};
    t[TypeID::get<arith::MinNumFOp>()] = {ReadsOperands, minRule};
    t[TypeID::get<arith::SelectOp>()] = {
        ReadsCondition, [](RuleContext &k) {
          Value cond = k.condition();
          Value zero = k.e.cst(0.0);
          k.seed(1, k.e.select(cond, k.c, zero));
          k.seed(2, k.e.select(cond, zero, k.c));
        }};
    t[TypeID::get<arith::ExtFOp>()] = {
        ReadsNothing, [](RuleContext &k) {
          k.seed(0, arith::TruncFOp::create(
                        k.e.b, k.e.loc, k.op->getOperand(0).getType(), k.c));
        }};
    t[TypeID::get<arith::TruncFOp>()] = {
        ReadsNothing, [](RuleContext &k) {
          k.seed(0, arith::ExtFOp::create(k.e.b, k.e.loc,
                                          k.op->getOperand(0).getType(), k.c));
        }};
    t[TypeID::get<math::ExpOp>()] = {
        ReadsResult, [](RuleContext &k) { k.seed(0, k.e.mul(k.c, k.r())); }};
    t[TypeID::get<math::LogOp>()] = {
        ReadsOperands, [](RuleContext &k) { k.seed(0, k.e.div(k.c, k.x(0))); }};
    t[TypeID::get<math::TanhOp>()] = {
        ReadsResult, [](RuleContext &k) {
          k.seed(0, k.e.mul(k.c, k.e.sub(k.e.cst(1.0), k.e.mul(k.r(), k.r()))));
        }};
    t[TypeID::get<math::SqrtOp>()] = {
        ReadsResult, [](RuleContext &k) {
          k.seed(0, k.e.div(k.e.mul(k.c, k.e.cst(0.5)), k.r()));
        }};
    // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 r / x.
    t[TypeID::get<math::RsqrtOp>()] = {
        ReadsOperands | ReadsResult, [](RuleContext &k) {
          k.seed(0,
                 k.e.mul(k.e.mul(k.c, k.e.cst(-0.5)), k.e.div(k.r(), k.x(0))));
        }};
    t[TypeID::get<math::ErfOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0);
          Value g = math::ExpOp::create(k.e.b, k.e.loc, k.e.neg(k.e.mul(x, x)));
          k.seed(0, k.e.mul(k.c, k.e.mul(k.e.cst(2.0 / std::sqrt(M_PI)), g)));
        }};
    t[TypeID::get<math::PowFOp>()] = {
        ReadsOperands | ReadsResult, [](RuleContext &k) {
          Value x = k.x(0), y = k.x(1);
          Value pm1 =
              math::PowFOp::create(k.e.b, k.e.loc, x, k.e.sub(y, k.e.cst(1.0)));
          k.seed(0, k.e.mul(k.c, k.e.mul(y, pm1)));
          Value exponent = k.op->getOperand(1);
          if (isa<BlockArgument>(exponent) ||
              !matchPattern(exponent, m_Constant()))
            k.seed(1, k.e.mul(k.c, k.e.mul(k.r(), math::LogOp::create(
                                                      k.e.b, k.e.loc, x))));
        }};
    // d/dx x^n = n x^(n-1) for an integer n (0 when n = 0, also at x = 0).
    t[TypeID::get<math::FPowIOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0), n = k.x(1);
          OpBuilder &b = k.e.b;
          Location loc = k.e.loc;
          Value one = arith::ConstantOp::create(
              b, loc, b.getIntegerAttr(n.getType(), 1));
          Value zero = arith::ConstantOp::create(
              b, loc, b.getIntegerAttr(n.getType(), 0));
          Value pm1 = math::FPowIOp::create(
              b, loc, x, arith::SubIOp::create(b, loc, n, one));
          Value nf = arith::SIToFPOp::create(b, loc, x.getType(), n);
          Value d = k.e.mul(k.c, k.e.mul(nf, pm1));
          Value isZero =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, zero);
          k.seed(0, k.e.select(isZero, k.e.cst(0.0), d));
        }};
    // d|x| = sign(x) c, with sign(0) = 0 (PyTorch's and JAX's convention:
    // no gradient at the kink).
    t[TypeID::get<math::AbsFOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0), zero = k.e.cst(0.0);
          Value pos = k.e.cmp(arith::CmpFPredicate::OGT, x, zero);
          Value neg = k.e.cmp(arith::CmpFPredicate::OLT, x, zero);
          k.seed(0, k.e.select(pos, k.c, k.e.select(neg, k.e.neg(k.c), zero)));
        }};
    // The rest of PyTorch's elementwise functions as torch-mlir lowers them
    // (softplus and log-sigmoid through log1p, expm1, the trigonometric and
    // hyperbolic functions, erfc, base-2 and base-10 logarithms).
    t[TypeID::get<math::Log1pOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          k.seed(0, k.e.div(k.c, k.e.add(k.e.cst(1.0), k.x(0))));
        }};
    t[TypeID::get<math::ExpM1Op>()] = {
        ReadsResult, [](RuleContext &k) {
          k.seed(0, k.e.mul(k.c, k.e.add(k.r(), k.e.cst(1.0))));
        }};
    t[TypeID::get<math::Exp2Op>()] = {
        ReadsResult, [](RuleContext &k) {
          k.seed(0, k.e.mul(k.c, k.e.mul(k.r(), k.e.cst(M_LN2))));
        }};
    t[TypeID::get<math::Log2Op>()] = {
        ReadsOperands, [](RuleContext &k) {
          k.seed(0, k.e.div(k.c, k.e.mul(k.x(0), k.e.cst(M_LN2))));
        }};
    t[TypeID::get<math::Log10Op>()] = {
        ReadsOperands, [](RuleContext &k) {
          k.seed(0, k.e.div(k.c, k.e.mul(k.x(0), k.e.cst(M_LN10))));
        }};
    t[TypeID::get<math::SinOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          k.seed(0, k.e.mul(k.c, math::CosOp::create(k.e.b, k.e.loc, k.x(0))));
        }};
    t[TypeID::get<math::CosOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          k.seed(0, k.e.neg(k.e.mul(
                        k.c, math::SinOp::create(k.e.b, k.e.loc, k.x(0)))));
        }};
    // d tan x = 1 + tan^2 x.
    t[TypeID::get<math::TanOp>()] = {
        ReadsResult, [](RuleContext &k) {
          Value r = k.r();
          k.seed(0, k.e.mul(k.c, k.e.add(k.e.cst(1.0), k.e.mul(r, r))));
        }};
    t[TypeID::get<math::SinhOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          k.seed(0, k.e.mul(k.c, math::CoshOp::create(k.e.b, k.e.loc, k.x(0))));
        }};
    t[TypeID::get<math::CoshOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          k.seed(0, k.e.mul(k.c, math::SinhOp::create(k.e.b, k.e.loc, k.x(0))));
        }};
    t[TypeID::get<math::AtanOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0);
          k.seed(0, k.e.div(k.c, k.e.add(k.e.cst(1.0), k.e.mul(x, x))));
        }};
    // r = atan2(y, x): dy = c x / (x^2 + y^2), dx = -c y / (x^2 + y^2).
    t[TypeID::get<math::Atan2Op>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value y = k.x(0), x = k.x(1);
          Value n = k.e.add(k.e.mul(x, x), k.e.mul(y, y));
          k.seed(0, k.e.div(k.e.mul(k.c, x), n));
          k.seed(1, k.e.neg(k.e.div(k.e.mul(k.c, y), n)));
        }};
    // d asin x = 1 / sqrt(1 - x^2), d acos x = -1 / sqrt(1 - x^2).
    t[TypeID::get<math::AsinOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0);
          Value s = math::SqrtOp::create(k.e.b, k.e.loc,
                                         k.e.sub(k.e.cst(1.0), k.e.mul(x, x)));
          k.seed(0, k.e.div(k.c, s));
        }};
    t[TypeID::get<math::AcosOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0);
          Value s = math::SqrtOp::create(k.e.b, k.e.loc,
                                         k.e.sub(k.e.cst(1.0), k.e.mul(x, x)));
          k.seed(0, k.e.neg(k.e.div(k.c, s)));
        }};
    // d asinh x = 1 / sqrt(x^2 + 1), d atanh x = 1 / (1 - x^2).
    t[TypeID::get<math::AsinhOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0);
          Value s = math::SqrtOp::create(k.e.b, k.e.loc,
                                         k.e.add(k.e.mul(x, x), k.e.cst(1.0)));
          k.seed(0, k.e.div(k.c, s));
        }};
    t[TypeID::get<math::AtanhOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0);
          k.seed(0, k.e.div(k.c, k.e.sub(k.e.cst(1.0), k.e.mul(x, x))));
        }};
    // d erfc x = -2 / sqrt(pi) exp(-x^2).
    t[TypeID::get<math::ErfcOp>()] = {
        ReadsOperands, [](RuleContext &k) {
          Value x = k.x(0);
          Value g = math::ExpOp::create(k.e.b, k.e.loc, k.e.neg(k.e.mul(x, x)));
          k.seed(0, k.e.mul(k.c, k.e.mul(k.e.cst(-2.0 / std::sqrt(M_PI)), g)));
        }};
    // d cbrt x = 1 / (3 r^2).
    t[TypeID::get<math::CbrtOp>()] = {
        ReadsResult, [](RuleContext &k) {
          Value r = k.r();
          k.seed(0, k.e.div(k.c, k.e.mul(k.e.cst(3.0), k.e.mul(r, r))));
        }};
    // r = a b + c.
    t[TypeID::get<math::FmaOp>()] = {ReadsOperands, [](RuleContext &k) {
                                       k.seed(0, k.e.mul(k.c, k.x(1)));
                                       k.seed(1, k.e.mul(k.c, k.x(0)));
                                       k.seed(2, k.c);
                                     }};
    // Piecewise constant: zero gradient (as PyTorch's floor, ceil, round,
    // trunc).
    auto zeroRule = [](RuleContext &) {};
    t[TypeID::get<math::FloorOp>()] = {ReadsNothing, zeroRule};
    t[TypeID::get<math::CeilOp>()] = {ReadsNothing, zeroRule};
    t[TypeID::get<math::RoundOp>()] = {ReadsNothing, zeroRule};
    t[TypeID::get<math::RoundEvenOp>()] = {ReadsNothing, zeroRule};
    t[TypeID::get<math::TruncOp>()] = {ReadsNothing, zeroRule};
    // Not differentiated through (its tensor comes from above, see
    // GenericRules), but recomputing it needs its operands.
    t[TypeID::get<tensor::ExtractOp>()] = {ReadsOperands, nullptr};
    return t;
  }();
  return rules;
}
} // namespace

LogicalResult ScalarReverse::run(Block &body, ArrayRef<Operation *> skip) {
  const llvm::DenseMap<TypeID, ScalarRule> &rules = scalarRules();
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
    auto it = rules.find(op->getName().getTypeID());
    if (it == rules.end() || !it->second.build)
      return op->emitOpError()
             << "has no derivative rule: train-differentiate cannot "
                "differentiate a linalg.generic body through it";
    RuleContext context{op, c, Emit{b, op->getLoc(), result.getType()}, map,
                        *this};
    it->second.build(context);
    // The needs of the adjoint are derived from the declaration: a rule that
    // reads more than it declares is a bug in the table.
    if (context.read & ~it->second.reads)
      return op->emitOpError()
             << "derivative rule reads forward values it does not declare "
                "(read mask "
             << context.read << ", declared " << it->second.reads
             << "): fix its entry in the scalar rule table";
  }
  return success();
}

SmallVector<bool> scalarArgsNeeded(Block &body, ArrayRef<Operation *> skip,
                                   ArrayRef<Value> extraRoots) {
  const llvm::DenseMap<TypeID, ScalarRule> &rules = scalarRules();
  SmallVector<Value> worklist(extraRoots);
  for (Operation &op : body.without_terminator()) {
    if (isSkipped(&op, skip))
      continue;
    auto it = rules.find(op.getName().getTypeID());
    if (it == rules.end())
      continue;
    unsigned reads = it->second.reads;
    // The result is recomputed from the operands.
    if (reads & (ReadsOperands | ReadsResult))
      llvm::append_range(worklist, op.getOperands());
    else if (reads & ReadsCondition)
      worklist.push_back(cast<arith::SelectOp>(op).getCondition());
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
