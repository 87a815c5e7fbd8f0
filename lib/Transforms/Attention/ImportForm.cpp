//===- ImportForm.cpp - The importer's form of attention ------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// PyTorch's attention through torch-mlir and ga-legalize-import: the heads
// moved before the positions (transposes, each maybe scaled), batch
// matmuls over [B * H, ...], the scores maybe scaled, a mask, the softmax,
// perhaps scaled_dot_product_attention's guard for rows without a visible
// key, and the output moved back to [B, S, H, E].
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "ga/Utils/LinalgMatchers.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace ga::attention;
using ga::combinesInputAndOutput;
using ga::constantFactor;
using ga::dimsAre;
using ga::fillValue;
using ga::floatConstant;
using ga::hasShape;
using ga::hasUsers;
using ga::isArg;
using ga::producer;
using ga::yieldedOp;
using ga::yieldedValue;

namespace {

/// The [B, H, X, Y] view of a [B, X, H, Y] tensor (permutation [0, 2, 1,
/// 3]), or its [B, H, Y, X] view ([0, 2, 3, 1]), maybe times a constant:
/// linalg.transpose, or a generic that reads the permuted input.
struct HeadView {
  Value source;
  double scale = 1.0;
};

std::optional<HeadView> matchHeadView(Value v, ArrayRef<int64_t> perm) {
  if (auto t = v.getDefiningOp<linalg::TransposeOp>()) {
    if (t.getPermutation() != perm)
      return std::nullopt;
    return HeadView{t.getInput()};
  }
  linalg::GenericOp g = producer(v);
  if (!g || !hasShape(g, 1, 0) || g.getNumLoops() != 4)
    return std::nullopt;
  // Loop i is the input's dimension perm[i].
  SmallVector<unsigned> inputDims(4);
  for (unsigned i = 0; i < 4; ++i)
    inputDims[perm[i]] = i;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (!dimsAre(maps[0], inputDims) || !dimsAre(maps[1], {0, 1, 2, 3}))
    return std::nullopt;
  Value y = yieldedValue(g);
  HeadView view{g.getDpsInputs()[0]};
  if (isArg(y, g, 0))
    return view;
  std::optional<double> factor = constantFactor(y, g);
  if (!factor)
    return std::nullopt;
  view.scale = *factor;
  return view;
}

bool isHeadsReassociation(ArrayRef<ReassociationIndices> r) {
  return r.size() == 3 && r[0] == ReassociationIndices{0, 1} &&
         r[1] == ReassociationIndices{2} && r[2] == ReassociationIndices{3};
}

/// A batch matmul over the heads: expand_shape([B * H, X, Z] -> [B, H, X,
/// Z]) of linalg.batch_matmul(lhs, rhs) from zero, lhs [B * H, X, Y] and
/// rhs [B * H, Y, Z]. Its result is read only by the expansion.
struct HeadProduct {
  Value lhs, rhs;
  int64_t batch, heads;
  linalg::BatchMatmulOp matmul;
};

std::optional<HeadProduct> matchHeadProduct(Value v) {
  auto expand = v.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || expand.getResultType().getRank() != 4 ||
      !isHeadsReassociation(expand.getReassociationIndices()))
    return std::nullopt;
  auto matmul = expand.getSrc().getDefiningOp<linalg::BatchMatmulOp>();
  if (!matmul || !expand.getSrc().hasOneUse() ||
      matmul.getIndexingMapsArray() !=
          linalg::BatchMatmulOp::getDefaultIndexingMaps(matmul.getContext()) ||
      fillValue(matmul.getDpsInits()[0]) != 0.0)
    return std::nullopt;
  ArrayRef<int64_t> shape = expand.getResultType().getShape();
  HeadProduct p{matmul.getDpsInputs()[0], matmul.getDpsInputs()[1], shape[0],
                shape[1], matmul};
  Type element = expand.getResultType().getElementType();
  for (Value x : {p.lhs, p.rhs})
    if (cast<ShapedType>(x.getType()).getElementType() != element)
      return std::nullopt;
  return p;
}

/// The [B, H, X, Y] tensor that `v` [B * H, X, Y] collapses, or null.
Value uncollapsedHeads(Value v, int64_t batch, int64_t heads) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 4 ||
      !isHeadsReassociation(collapse.getReassociationIndices()) ||
      collapse.getSrcType().getShape().take_front(2) !=
          ArrayRef<int64_t>{batch, heads})
    return {};
  return collapse.getSrc();
}

/// select(all_j s == -inf, 0, p): PyTorch's scaled_dot_product_attention
/// gives rows without a visible key zeros instead of NaN. With a causal
/// mask every row sees its own key, whose score is finite for finite
/// queries and keys, so that the guard never selects.
struct NoKeyGuard {
  linalg::GenericOp select, compare;
  Value probs, scores;
};

std::optional<NoKeyGuard> matchNoKeyGuard(Value v) {
  linalg::GenericOp g = producer(v);
  if (!g || !hasShape(g, 2, 0) || g.getNumLoops() != 4)
    return std::nullopt;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (!dimsAre(maps[0], {0, 1, 2}) || !dimsAre(maps[1], {0, 1, 2, 3}) ||
      !dimsAre(maps[2], {0, 1, 2, 3}))
    return std::nullopt;
  auto select = dyn_cast_or_null<arith::SelectOp>(yieldedOp(g));
  if (!select || !isArg(select.getCondition(), g, 0) ||
      floatConstant(select.getTrueValue()) != 0.0 ||
      !isArg(select.getFalseValue(), g, 1))
    return std::nullopt;
  // all_j: a reduction with `and` from true.
  linalg::GenericOp all = producer(g.getDpsInputs()[0]);
  auto fill =
      all ? all.getDpsInits()[0].getDefiningOp<linalg::FillOp>() : nullptr;
  if (!all || !isScoresRowReduction(all) || !fill ||
      !matchPattern(fill.getInputs()[0], m_One()) ||
      !combinesInputAndOutput<arith::AndIOp>(all) ||
      !hasUsers(all->getResult(0), {g}))
    return std::nullopt;
  // s == -inf, perhaps in a wider type.
  linalg::GenericOp compare = producer(all.getDpsInputs()[0]);
  if (!compare || !isScoresRowwise(compare, 1) ||
      !hasUsers(compare->getResult(0), {all}))
    return std::nullopt;
  auto cmp = dyn_cast_or_null<arith::CmpFOp>(yieldedOp(compare));
  if (!cmp || cmp.getPredicate() != arith::CmpFPredicate::OEQ)
    return std::nullopt;
  Value score = cmp.getLhs();
  std::optional<double> bound = floatConstant(cmp.getRhs());
  if (auto ext = score.getDefiningOp<arith::ExtFOp>())
    score = ext.getIn();
  if (!isArg(score, compare, 0) || !bound ||
      *bound != -std::numeric_limits<double>::infinity())
    return std::nullopt;
  return NoKeyGuard{g, compare, g.getDpsInputs()[1], compare.getDpsInputs()[0]};
}

/// `v`, an operand [B * H, X, Y] of a heads' matmul (with `keys`, [B * H, Y,
/// X]: the keys transposed for the scores).
std::optional<HeadOperand> matchHeadOperand(Value v, int64_t batch,
                                            int64_t heads, bool keys) {
  if (Value t = uncollapsedHeads(v, batch, heads)) {
    if (std::optional<HeadView> view =
            matchHeadView(t, keys ? ArrayRef<int64_t>{0, 2, 3, 1}
                                  : ArrayRef<int64_t>{0, 2, 1, 3}))
      return HeadOperand{HeadOperand::PositionMajor, view->source, view->scale};
    if (!keys)
      return HeadOperand{HeadOperand::HeadMajor, t};
    // [B, H, Y, X]: the head-major keys [B, H, X, Y] transposed.
    auto transpose = t.getDefiningOp<linalg::TransposeOp>();
    if (!transpose ||
        transpose.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
      return std::nullopt;
    return HeadOperand{HeadOperand::HeadMajor, transpose.getInput()};
  }
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (keys || !collapse || collapse.getSrcType().getRank() != 5)
    return std::nullopt;
  ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
  SmallVector<ReassociationIndices> r = collapse.getReassociationIndices();
  if (r.size() != 3 || r[0] != ReassociationIndices{0, 1, 2} ||
      shape[0] != batch || shape[1] * shape[2] != heads)
    return std::nullopt;
  return HeadOperand{HeadOperand::Grouped, collapse.getSrc()};
}

} // namespace

/// The importer's form (PyTorch's attention through torch-mlir and
/// ga-legalize-import): the heads moved before the positions (transposes,
/// each maybe scaled), batch matmuls over [B * H, ...], the scores maybe
/// scaled, a causal mask (a boolean or additive tensor over [S, T]), the
/// softmax with the subtraction in a generic of its own, perhaps
/// scaled_dot_product_attention's guard, and the output moved back to [B,
/// S, H, E].
std::optional<Chain>
ga::attention::matchImportChain(linalg::BatchMatmulOp context) {
  Chain c;
  if (!context->getResult(0).hasOneUse())
    return std::nullopt;
  auto expand =
      dyn_cast<tensor::ExpandShapeOp>(*context->getResult(0).user_begin());
  std::optional<HeadProduct> pv =
      expand ? matchHeadProduct(expand.getResult()) : std::nullopt;
  if (!pv || !expand->hasOneUse())
    return std::nullopt;
  // out[b, i, h, e]: the product moved back.
  c.last = *expand->user_begin();
  if (c.last->getNumResults() != 1)
    return std::nullopt;
  std::optional<HeadView> back =
      matchHeadView(c.last->getResult(0), {0, 2, 1, 3});
  std::optional<HeadOperand> value =
      matchHeadOperand(pv->rhs, pv->batch, pv->heads, /*keys=*/false);
  if (!back || back->source != expand.getResult() || back->scale != 1.0 ||
      !value || value->scale != 1.0)
    return std::nullopt;
  c.value = *value;
  // The probabilities, perhaps behind the guard.
  Value probs = uncollapsedHeads(pv->lhs, pv->batch, pv->heads);
  Operation *probsUser = pv->lhs.getDefiningOp();
  if (!probs)
    return std::nullopt;
  std::optional<NoKeyGuard> guard = matchNoKeyGuard(probs);
  SmallVector<Operation *> guardReaders;
  if (guard) {
    if (!hasUsers(probs, {probsUser}))
      return std::nullopt;
    probsUser = guard->select;
    probs = guard->probs;
    guardReaders.push_back(guard->compare);
  }
  if (!matchScoresSoftmax(probs, probsUser, c, guardReaders) ||
      (guard && guard->scores != c.maskedScores))
    return std::nullopt;
  Value scores = c.maskedScores;
  // The guard is dropped only where every row sees a key: its own.
  if (!unmask(scores, c) || (guard && (!c.causal || c.keyMask)))
    return std::nullopt;
  // An optional scale of the scores.
  if (linalg::GenericOp g = producer(scores); g && isScoresRowwise(g, 1)) {
    if (std::optional<double> factor = constantFactor(yieldedValue(g), g)) {
      c.scale = *factor;
      scores = g.getDpsInputs()[0];
      if (!scores.hasOneUse())
        return std::nullopt;
    }
  }
  std::optional<HeadProduct> qk = matchHeadProduct(scores);
  if (!qk)
    return std::nullopt;
  std::optional<HeadOperand> query =
      matchHeadOperand(qk->lhs, qk->batch, qk->heads, /*keys=*/false);
  std::optional<HeadOperand> key =
      matchHeadOperand(qk->rhs, qk->batch, qk->heads, /*keys=*/true);
  if (!query || !key)
    return std::nullopt;
  c.query = *query;
  c.key = *key;
  c.scale *= query->scale * key->scale;
  return oneFloatType(c);
}
