//===- LinalgMatchers.cpp - Structural matches of linalg.generic ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Utils/LinalgMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

Operation *ga::yieldedOp(linalg::GenericOp g) {
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  if (yield.getNumOperands() != 1)
    return nullptr;
  return yield.getOperand(0).getDefiningOp();
}

bool ga::isArg(Value v, linalg::GenericOp g, unsigned i) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == g.getBody() && arg.getArgNumber() == i;
}

std::optional<double> ga::floatConstant(Value v) {
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  return std::nullopt;
}

std::optional<double> ga::fillValue(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  return floatConstant(fill.getInputs()[0]);
}

linalg::GenericOp ga::producer(Value v) {
  return v.getDefiningOp<linalg::GenericOp>();
}

bool ga::hasUsers(Value v, ArrayRef<Operation *> users) {
  SmallVector<Operation *> got(v.getUsers());
  if (got.size() != users.size())
    return false;
  return llvm::all_of(users,
                      [&](Operation *u) { return llvm::is_contained(got, u); });
}

/// Whether the maps of `g` are the identity of its loops, the `row` inputs
/// (by index) read at all loops but the last.
static bool identityMaps(linalg::GenericOp g, ArrayRef<unsigned> rows) {
  unsigned n = g.getNumLoops();
  for (auto [i, map] : llvm::enumerate(g.getIndexingMapsArray())) {
    bool row = llvm::is_contained(rows, unsigned(i));
    unsigned results = row ? n - 1 : n;
    if (map.getNumResults() != results)
      return false;
    for (unsigned r = 0; r < results; ++r)
      if (map.getResult(r) != getAffineDimExpr(r, g.getContext()))
        return false;
  }
  return true;
}

/// One result, `inputs` inputs, all loops parallel, identity maps (input 1
/// a row when `rowInput`).
static bool isElementwise(linalg::GenericOp g, unsigned inputs, bool rowInput) {
  if (!g || g.getNumDpsInputs() != inputs || g.getNumDpsInits() != 1 ||
      g->getNumResults() != 1 || g.getNumLoops() == 0 ||
      g.getNumReductionLoops() != 0)
    return false;
  return rowInput ? identityMaps(g, {1}) : identityMaps(g, {});
}

/// One input reduced over the last loop (the others parallel) into a row.
static bool isRowReduction(linalg::GenericOp g) {
  if (!g || g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
      g->getNumResults() != 1 || g.getNumLoops() == 0 ||
      g.getNumReductionLoops() != 1 ||
      g.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return false;
  return identityMaps(g, {1});
}

std::optional<ga::SoftmaxChain> ga::matchSoftmax(linalg::GenericOp probs) {
  if (!isElementwise(probs, 2, /*rowInput=*/true))
    return std::nullopt;
  auto div = dyn_cast_or_null<arith::DivFOp>(yieldedOp(probs));
  if (!div || !isArg(div.getLhs(), probs, 0) || !isArg(div.getRhs(), probs, 1))
    return std::nullopt;
  SoftmaxChain c;
  c.probs = probs;
  c.exp = producer(probs.getDpsInputs()[0]);
  c.sum = producer(probs.getDpsInputs()[1]);
  // sum over the row of exp, from zero.
  if (!isRowReduction(c.sum) || fillValue(c.sum.getDpsInits()[0]) != 0.0 ||
      !combinesInputAndOutput<arith::AddFOp>(c.sum) ||
      !hasUsers(c.sum->getResult(0), {probs}))
    return std::nullopt;
  if (!c.exp || c.sum.getDpsInputs()[0] != c.exp->getResult(0) ||
      !hasUsers(c.exp->getResult(0), {c.sum, probs}))
    return std::nullopt;
  auto e = dyn_cast_or_null<math::ExpOp>(yieldedOp(c.exp));
  if (!e)
    return std::nullopt;
  // exp(s - max) in one generic, or exp(d) of d = s - max.
  c.difference = c.exp;
  arith::SubFOp difference;
  if (isElementwise(c.exp, 1, false) && isArg(e.getOperand(), c.exp, 0)) {
    c.difference = producer(c.exp.getDpsInputs()[0]);
    if (!c.difference || !hasUsers(c.difference->getResult(0), {c.exp}))
      return std::nullopt;
    difference = dyn_cast_or_null<arith::SubFOp>(yieldedOp(c.difference));
  } else {
    difference = e.getOperand().getDefiningOp<arith::SubFOp>();
  }
  if (!difference || !isElementwise(c.difference, 2, /*rowInput=*/true) ||
      !isArg(difference.getLhs(), c.difference, 0) ||
      !isArg(difference.getRhs(), c.difference, 1))
    return std::nullopt;
  c.scores = c.difference.getDpsInputs()[0];
  c.rowMax = producer(c.difference.getDpsInputs()[1]);
  // The maximum over the row, from at most the lowest float.
  std::optional<double> lowest =
      c.rowMax ? fillValue(c.rowMax.getDpsInits()[0]) : std::nullopt;
  if (!isRowReduction(c.rowMax) || !lowest || *lowest > -3.0e38 ||
      c.rowMax.getDpsInputs()[0] != c.scores ||
      !(combinesInputAndOutput<arith::MaximumFOp>(c.rowMax) ||
        combinesInputAndOutput<arith::MaxNumFOp>(c.rowMax)) ||
      !hasUsers(c.rowMax->getResult(0), {c.difference}))
    return std::nullopt;
  // One float type throughout.
  Type element = getElementTypeOrSelf(c.scores.getType());
  for (Value v :
       {c.rowMax->getResult(0), c.difference->getResult(0), c.exp->getResult(0),
        c.sum->getResult(0), probs->getResult(0)})
    if (getElementTypeOrSelf(v.getType()) != element)
      return std::nullopt;
  return c;
}

/// The first value a generic yields (its only one, where it has one
/// result).
Value ga::yieldedValue(linalg::GenericOp g) {
  return cast<linalg::YieldOp>(g.getBody()->getTerminator()).getOperand(0);
}

/// c where `v` is mulf(input 0 of `g`, c) or mulf(c, input 0), c a float
/// constant.
std::optional<double> ga::constantFactor(Value v, linalg::GenericOp g) {
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (mul && isArg(mul.getLhs(), g, 0))
    return floatConstant(mul.getRhs());
  if (mul && isArg(mul.getRhs(), g, 0))
    return floatConstant(mul.getLhs());
  return std::nullopt;
}

/// The loop dimensions of `map`'s results, when each is a plain dimension.
std::optional<SmallVector<unsigned>> ga::dimsOf(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  return dims;
}

bool ga::dimsAre(AffineMap map, ArrayRef<unsigned> dims) {
  std::optional<SmallVector<unsigned>> got = dimsOf(map);
  return got && ArrayRef<unsigned>(*got) == dims;
}

bool ga::hasShape(linalg::GenericOp g, unsigned inputs, unsigned reductions) {
  return g.getNumDpsInputs() == inputs && g.getNumDpsInits() == 1 &&
         g->getNumResults() == 1 && g.getNumReductionLoops() == reductions;
}

std::optional<ga::Contraction> ga::matchContraction(linalg::GenericOp g) {
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
