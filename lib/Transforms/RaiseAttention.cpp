//===- RaiseAttention.cpp - Attention written in linalg to train.attention ===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Attention written as seven linalg.generic operations (scores, mask,
// row maximum, exponentials, their sum, the division, the contraction with
// the values) holds [B, H, S, T] tensors, and its gradient saves the
// probabilities for the backward pass. As one train.attention, the lowering
// computes it over key tiles (online softmax) and the gradient recomputes
// the probabilities tile by tile from the row's log-sum-exp.
//
// The match is structural: each generic's indexing maps (in whatever loop
// order), iterator kinds and body, and each intermediate used only by the
// next step of the chain.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINRAISEATTENTIONPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// The value a generic yields, when it yields one.
Operation *yieldedOp(linalg::GenericOp g) {
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  if (yield.getNumOperands() != 1)
    return nullptr;
  return yield.getOperand(0).getDefiningOp();
}

bool isArg(Value v, linalg::GenericOp g, unsigned i) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == g.getBody() && arg.getArgNumber() == i;
}

std::optional<double> floatConstant(Value v) {
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  return std::nullopt;
}

std::optional<double> fillValue(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  return floatConstant(fill.getInputs()[0]);
}

/// The loop dimensions of `map`'s results, when each is a plain dimension.
std::optional<SmallVector<unsigned>> dimsOf(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  return dims;
}

bool dimsAre(AffineMap map, ArrayRef<unsigned> dims) {
  std::optional<SmallVector<unsigned>> got = dimsOf(map);
  return got && ArrayRef<unsigned>(*got) == dims;
}

bool hasShape(linalg::GenericOp g, unsigned inputs, unsigned reductions) {
  return g.getNumDpsInputs() == inputs && g.getNumDpsInits() == 1 &&
         g->getNumResults() == 1 && g.getNumReductionLoops() == reductions;
}

/// sum over one reduction loop of in0 * in1 (each product optionally times
/// a constant), into a fill of zero. Returns the constant (1 without one)
/// and the reduction loop.
struct Contraction {
  double scale = 1.0;
  unsigned reduction = 0;
};

std::optional<Contraction> matchContraction(linalg::GenericOp g) {
  if (!hasShape(g, 2, 1) || fillValue(g.getDpsInits()[0]) != 0.0)
    return std::nullopt;
  auto add = dyn_cast_or_null<arith::AddFOp>(yieldedOp(g));
  if (!add)
    return std::nullopt;
  Value term;
  if (isArg(add.getLhs(), g, 2))
    term = add.getRhs();
  else if (isArg(add.getRhs(), g, 2))
    term = add.getLhs();
  else
    return std::nullopt;
  auto isProduct = [&](arith::MulFOp m) {
    return m && ((isArg(m.getLhs(), g, 0) && isArg(m.getRhs(), g, 1)) ||
                 (isArg(m.getLhs(), g, 1) && isArg(m.getRhs(), g, 0)));
  };
  Contraction c;
  auto mul = term.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  if (!isProduct(mul)) {
    std::optional<double> factor;
    arith::MulFOp inner;
    if ((factor = floatConstant(mul.getRhs())))
      inner = mul.getLhs().getDefiningOp<arith::MulFOp>();
    else if ((factor = floatConstant(mul.getLhs())))
      inner = mul.getRhs().getDefiningOp<arith::MulFOp>();
    if (!factor || !isProduct(inner))
      return std::nullopt;
    c.scale = *factor;
  }
  for (auto [i, kind] : llvm::enumerate(g.getIteratorTypesArray()))
    if (kind == utils::IteratorType::reduction)
      c.reduction = i;
  return c;
}

/// A generic over [B, H, S, T] whose maps are the identity (and, for a
/// second input, the row [B, H, S]).
bool isRowwise(linalg::GenericOp g, unsigned inputs) {
  if (!hasShape(g, inputs, 0) || g.getNumLoops() != 4)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  for (auto [i, map] : llvm::enumerate(maps)) {
    bool row = inputs == 2 && i == 1;
    if (!dimsAre(map, row ? ArrayRef<unsigned>{0, 1, 2}
                          : ArrayRef<unsigned>{0, 1, 2, 3}))
      return false;
  }
  return true;
}

/// A reduction of [B, H, S, T] over its last loop into [B, H, S].
bool isRowReduction(linalg::GenericOp g) {
  if (!hasShape(g, 1, 1) || g.getNumLoops() != 4 ||
      g.getIteratorTypesArray()[3] != utils::IteratorType::reduction)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  return dimsAre(maps[0], {0, 1, 2, 3}) && dimsAre(maps[1], {0, 1, 2});
}

/// Whether `op` combines the body's input 0 and its output (arg 1).
template <typename OpTy> bool combinesInputAndOutput(linalg::GenericOp g) {
  auto op = dyn_cast_or_null<OpTy>(yieldedOp(g));
  return op && ((isArg(op.getLhs(), g, 0) && isArg(op.getRhs(), g, 1)) ||
                (isArg(op.getLhs(), g, 1) && isArg(op.getRhs(), g, 0)));
}

/// select(j > i, c, s): returns c.
std::optional<double> matchCausalMask(linalg::GenericOp g) {
  if (!isRowwise(g, 1))
    return std::nullopt;
  auto select = dyn_cast_or_null<arith::SelectOp>(yieldedOp(g));
  if (!select || !isArg(select.getFalseValue(), g, 0))
    return std::nullopt;
  std::optional<double> masked = floatConstant(select.getTrueValue());
  auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!masked || !cmp)
    return std::nullopt;
  auto indexOf = [](Value v) -> int64_t {
    auto index = v.getDefiningOp<linalg::IndexOp>();
    return index ? static_cast<int64_t>(index.getDim()) : -1;
  };
  int64_t lhs = indexOf(cmp.getLhs()), rhs = indexOf(cmp.getRhs());
  using P = arith::CmpIPredicate;
  P pred = cmp.getPredicate();
  bool keyAfterQuery =
      ((pred == P::ugt || pred == P::sgt) && lhs == 3 && rhs == 2) ||
      ((pred == P::ult || pred == P::slt) && lhs == 2 && rhs == 3);
  if (!keyAfterQuery)
    return std::nullopt;
  return masked;
}

linalg::GenericOp producer(Value v) {
  return v.getDefiningOp<linalg::GenericOp>();
}

bool hasUsers(Value v, ArrayRef<Operation *> users) {
  SmallVector<Operation *> got(v.getUsers());
  if (got.size() != users.size())
    return false;
  return llvm::all_of(users,
                      [&](Operation *u) { return llvm::is_contained(got, u); });
}

/// The seven generics of one attention, from the last.
struct Chain {
  linalg::GenericOp scores, mask, rowMax, exp, sum, probs, context;
  double scale = 1.0;
  std::optional<double> maskedScore;
  Value query, key, value;
};

std::optional<Chain> matchChain(linalg::GenericOp context) {
  Chain c;
  c.context = context;
  std::optional<Contraction> ctx = matchContraction(context);
  if (!ctx || ctx->scale != 1.0 || context.getNumLoops() != 5)
    return std::nullopt;
  // out[b, i, h, e] = sum_j probs[b, h, i, j] * value[b, j, h, e].
  SmallVector<AffineMap> maps = context.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> o = dimsOf(maps[2]);
  unsigned r = ctx->reduction;
  if (!o || o->size() != 4 ||
      !dimsAre(maps[0], {(*o)[0], (*o)[2], (*o)[1], r}) ||
      !dimsAre(maps[1], {(*o)[0], r, (*o)[2], (*o)[3]}))
    return std::nullopt;
  c.value = context.getDpsInputs()[1];

  // probs = exp / sum.
  c.probs = producer(context.getDpsInputs()[0]);
  if (!c.probs || !isRowwise(c.probs, 2) ||
      !hasUsers(c.probs->getResult(0), {context}))
    return std::nullopt;
  auto div = dyn_cast_or_null<arith::DivFOp>(yieldedOp(c.probs));
  if (!div || !isArg(div.getLhs(), c.probs, 0) ||
      !isArg(div.getRhs(), c.probs, 1))
    return std::nullopt;
  c.exp = producer(c.probs.getDpsInputs()[0]);
  c.sum = producer(c.probs.getDpsInputs()[1]);
  // sum over the keys of exp, from zero.
  if (!c.sum || !isRowReduction(c.sum) ||
      fillValue(c.sum.getDpsInits()[0]) != 0.0 ||
      !combinesInputAndOutput<arith::AddFOp>(c.sum) ||
      !hasUsers(c.sum->getResult(0), {c.probs}))
    return std::nullopt;
  // exp = exp(scores - max).
  if (!c.exp || !isRowwise(c.exp, 2) ||
      c.sum.getDpsInputs()[0] != c.exp->getResult(0) ||
      !hasUsers(c.exp->getResult(0), {c.sum, c.probs}))
    return std::nullopt;
  auto exp = dyn_cast_or_null<math::ExpOp>(yieldedOp(c.exp));
  auto sub = exp ? exp.getOperand().getDefiningOp<arith::SubFOp>() : nullptr;
  if (!sub || !isArg(sub.getLhs(), c.exp, 0) || !isArg(sub.getRhs(), c.exp, 1))
    return std::nullopt;
  Value scores = c.exp.getDpsInputs()[0];
  c.rowMax = producer(c.exp.getDpsInputs()[1]);
  // The maximum over the keys, from at most the lowest float.
  std::optional<double> lowest =
      c.rowMax ? fillValue(c.rowMax.getDpsInits()[0]) : std::nullopt;
  if (!c.rowMax || !isRowReduction(c.rowMax) || !lowest || *lowest > -3.0e38 ||
      c.rowMax.getDpsInputs()[0] != scores ||
      !(combinesInputAndOutput<arith::MaximumFOp>(c.rowMax) ||
        combinesInputAndOutput<arith::MaxNumFOp>(c.rowMax)) ||
      !hasUsers(c.rowMax->getResult(0), {c.exp}) ||
      !hasUsers(scores, {c.rowMax, c.exp}))
    return std::nullopt;
  // An optional causal mask.
  if (linalg::GenericOp mask = producer(scores)) {
    if ((c.maskedScore = matchCausalMask(mask))) {
      c.mask = mask;
      scores = mask.getDpsInputs()[0];
      if (!scores.hasOneUse())
        return std::nullopt;
    }
  }
  // scores[b, h, i, j] = sum_d query[b, i, h, d] * key[b, j, h, d] * scale.
  c.scores = producer(scores);
  if (!c.scores || c.scores.getNumLoops() != 5)
    return std::nullopt;
  std::optional<Contraction> s = matchContraction(c.scores);
  if (!s)
    return std::nullopt;
  maps = c.scores.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> so = dimsOf(maps[2]);
  r = s->reduction;
  if (!so || so->size() != 4 ||
      !dimsAre(maps[0], {(*so)[0], (*so)[2], (*so)[1], r}) ||
      !dimsAre(maps[1], {(*so)[0], (*so)[3], (*so)[1], r}))
    return std::nullopt;
  c.scale = s->scale;
  c.query = c.scores.getDpsInputs()[0];
  c.key = c.scores.getDpsInputs()[1];
  // One float type throughout.
  Type element = cast<ShapedType>(c.query.getType()).getElementType();
  for (Value v : {c.key, c.value, Value(c.context->getResult(0))})
    if (cast<ShapedType>(v.getType()).getElementType() != element)
      return std::nullopt;
  return c;
}

int64_t largestDivisorAtMost(int64_t n, int64_t bound) {
  for (int64_t t = std::min(n, bound); t > 1; --t)
    if (n % t == 0)
      return t;
  return 1;
}

struct TrainRaiseAttentionPass
    : ga::impl::TrainRaiseAttentionPassBase<TrainRaiseAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    if (keyTile < 1) {
      getOperation()->emitError()
          << "train-raise-attention: key-tile must be positive, got "
          << keyTile.getValue();
      return signalPassFailure();
    }
    SmallVector<Chain> chains;
    getOperation()->walk([&](linalg::GenericOp g) {
      if (std::optional<Chain> chain = matchChain(g))
        chains.push_back(*chain);
    });
    for (Chain &c : chains)
      raise(c);
  }

  void raise(Chain &c) {
    OpBuilder b(c.context);
    auto query = cast<RankedTensorType>(c.query.getType());
    auto key = cast<RankedTensorType>(c.key.getType());
    auto lseType = RankedTensorType::get(
        {query.getDimSize(0), query.getDimSize(2), query.getDimSize(1)},
        query.getElementType());
    auto attention = ga::train::AttentionOp::create(
        b, c.context.getLoc(),
        TypeRange{c.context->getResult(0).getType(), lseType}, c.query, c.key,
        c.value, b.getF64FloatAttr(c.scale),
        c.maskedScore ? b.getUnitAttr() : nullptr,
        b.getF64FloatAttr(c.maskedScore.value_or(-1.0e9)),
        b.getI64IntegerAttr(largestDivisorAtMost(key.getDimSize(1), keyTile)));
    c.context->getResult(0).replaceAllUsesWith(attention.getOut());
    // The chain, from the last, with its fills and empty tensors: each
    // intermediate had its successor for only user.
    ga::eraseWithDeadProducers(c.context);
  }
};

} // namespace
