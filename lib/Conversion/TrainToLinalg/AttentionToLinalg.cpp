//===- AttentionToLinalg.cpp - train.attention over key tiles -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train.attention and train.attention_grad become an scf.for over tiles of
// keys whose body is linalg on tensors, so that no [B, H, S, T] tensor is
// made: the largest is [B, H, S, key_tile].
//
// Forward (online softmax): per row a running maximum m and sum l, and the
// unnormalized output; at each tile
//   m' = max(m, max_j s),  p = exp(s - m'),  a = exp(m - m'),
//   l' = l * a + sum_j p,  acc' = acc * a + sum_j p v;
// after the last, out = acc / l and lse = m + log(l).
//
// Backward (recomputing per tile): delta = sum_e dout out - dlse, then at
// each tile p = exp(s - lse), dv_t = p^T dout, ds = p (dout v_t^T - delta),
// dq += ds k_t scale, dk_t = ds^T q scale.
//
//===----------------------------------------------------------------------===//

#include "ga/Conversion/TrainToLinalg.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "train/TrainOps.h"

#include <limits>

using namespace mlir;
using namespace ga;
using namespace ga::train;
using utils::IteratorType;

namespace {

constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

/// Builds the generics of one attention (or its gradient) on tensors of
/// shape [B, S, H, D] (queries), [B, T, H, D] (keys), [B, T, H, E] (values).
struct AttentionBuilder {
  OpBuilder &b;
  Location loc;
  Type f;
  int64_t batch, queries, heads, features, keys, valueFeatures, tile;
  double scale, maskedScore;
  bool causal;
  /// [B, T] i1, true where the key is seen; null without one.
  Value keyMask;

  template <typename OpTy>
  AttentionBuilder(OpBuilder &b, OpTy op)
      : b(b), loc(op.getLoc()), scale(op.getScale().convertToDouble()),
        maskedScore(op.getMaskedScore().convertToDouble()),
        causal(op.getCausal()), keyMask(op.getKeyMask()) {
    auto q = cast<RankedTensorType>(op.getQuery().getType());
    auto k = cast<RankedTensorType>(op.getKey().getType());
    auto v = cast<RankedTensorType>(op.getValue().getType());
    f = q.getElementType();
    batch = q.getDimSize(0);
    queries = q.getDimSize(1);
    heads = q.getDimSize(2);
    features = q.getDimSize(3);
    keys = k.getDimSize(1);
    valueFeatures = v.getDimSize(3);
    tile = op.getKeyTile() > 0 ? op.getKeyTile() : keys;
  }

  AffineMap map(unsigned loops, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(loops, 0, exprs, b.getContext());
  }
  Value constant(OpBuilder &nb, Location nl, double value) {
    return arith::ConstantOp::create(nb, nl, nb.getFloatAttr(f, value));
  }
  Value fill(ArrayRef<int64_t> shape, double value) {
    return filledTensor(b, loc, shape, b.getFloatAttr(f, value));
  }
  Value empty(ArrayRef<int64_t> shape) {
    return tensor::EmptyOp::create(b, loc, shape, f);
  }
  Value generic(Value init, ValueRange inputs, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, init.getType(), inputs, init, maps, iterators,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl, body(nb, nl, args));
               })
        .getResult(0);
  }

  /// The key tile starting at `offset` of `tensor` [B, T, H, X].
  Value keyTile(Value tensor, Value offset) {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), offset,
                                      b.getIndexAttr(0), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(batch), b.getIndexAttr(tile),
                                    b.getIndexAttr(heads),
                                    b.getIndexAttr(type.getDimSize(3))};
    SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(b, loc, tensor, offsets, sizes,
                                          strides);
  }
  Value insertKeyTile(Value tileValue, Value into, Value offset) {
    auto type = cast<RankedTensorType>(tileValue.getType());
    SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), offset,
                                      b.getIndexAttr(0), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes;
    for (int64_t size : type.getShape())
      sizes.push_back(b.getIndexAttr(size));
    SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
    return tensor::InsertSliceOp::create(b, loc, tileValue, into, offsets,
                                         sizes, strides);
  }

  /// Whether the key (j + offset) is hidden from the query i, in a body
  /// whose loops 2 and 3 are i and j and whose argument `seen` (null
  /// without a key mask) is the key mask's element; null when nothing is
  /// masked.
  Value hidden(OpBuilder &nb, Location nl, Value offset, Value seen) {
    Value hide;
    if (causal) {
      Value i = linalg::IndexOp::create(nb, nl, 2);
      Value j = linalg::IndexOp::create(nb, nl, 3);
      Value key = arith::AddIOp::create(nb, nl, j, offset);
      hide = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, key, i);
    }
    if (seen) {
      Value unseen = arith::XOrIOp::create(
          nb, nl, seen,
          arith::ConstantOp::create(nb, nl, nb.getBoolAttr(true)));
      hide = hide ? arith::OrIOp::create(nb, nl, hide, unseen).getResult()
                  : unseen;
    }
    return hide;
  }

  /// The score, masked_score where hidden.
  Value mask(OpBuilder &nb, Location nl, Value score, Value offset,
             Value seen) {
    Value hide = hidden(nb, nl, offset, seen);
    if (!hide)
      return score;
    return arith::SelectOp::create(nb, nl, hide, constant(nb, nl, maskedScore),
                                   score);
  }

  /// Appends the key mask's tile at `offset` to a generic over (b, h, i,
  /// j) with `inputs` and `maps` (the output's map last): returns the
  /// body argument's position, or -1 without a key mask.
  int withKeyMask(SmallVectorImpl<Value> &inputs,
                  SmallVectorImpl<AffineMap> &maps, Value offset) {
    if (!keyMask)
      return -1;
    SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), offset};
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(batch),
                                    b.getIndexAttr(tile)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    inputs.push_back(tensor::ExtractSliceOp::create(b, loc, keyMask, offsets,
                                                    sizes, strides));
    maps.insert(maps.end() - 1, map(4, {0, 3}));
    return static_cast<int>(inputs.size()) - 1;
  }
  static Value arg(ValueRange args, int position) {
    return position < 0 ? Value() : args[position];
  }

  /// s[b, h, i, j] = sum_d (q[b, i, h, d] * k_t[b, j, h, d]) * scale.
  Value scores(Value query, Value keyTileValue) {
    return generic(
        fill({batch, heads, queries, tile}, 0.0),
        ValueRange{query, keyTileValue},
        {map(5, {0, 2, 1, 4}), map(5, {0, 3, 1, 4}), map(5, {0, 1, 2, 3})},
        {kPar, kPar, kPar, kPar, kRed},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value p = arith::MulFOp::create(nb, nl, args[0], args[1]);
          Value ps = arith::MulFOp::create(nb, nl, p, constant(nb, nl, scale));
          return arith::AddFOp::create(nb, nl, args[2], ps).getResult();
        });
  }

  /// Loops (b, h, i, j): the identity and the row.
  AffineMap id4() { return map(4, {0, 1, 2, 3}); }
  AffineMap row4() { return map(4, {0, 1, 2}); }
  /// Loops (b, i, h, e): the identity and the row [b, h, i].
  AffineMap bihe() { return map(4, {0, 1, 2, 3}); }
  AffineMap rowOfBihe() { return map(4, {0, 2, 1}); }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
};

struct AttentionToLinalg : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    AttentionBuilder a(rewriter, op);
    Location loc = op.getLoc();
    SmallVector<int64_t> rowShape{a.batch, a.heads, a.queries};
    SmallVector<int64_t> outShape{a.batch, a.queries, a.heads, a.valueFeatures};
    Value m0 = a.fill(rowShape, -std::numeric_limits<float>::max());
    Value l0 = a.fill(rowShape, 0.0);
    Value acc0 = a.fill(outShape, 0.0);
    auto loop = scf::ForOp::create(
        rewriter, loc, a.index(0), a.index(a.keys), a.index(a.tile),
        ValueRange{m0, l0, acc0},
        [&](OpBuilder &, Location nl, Value offset, ValueRange iter) {
          // scf.for builds its body with the builder it is created with:
          // `rewriter`, which `a` builds with, is inside the body here.
          AttentionBuilder &t = a;
          Value m = iter[0], l = iter[1], acc = iter[2];
          Value kt = t.keyTile(op.getKey(), offset);
          Value vt = t.keyTile(op.getValue(), offset);
          Value s = t.scores(op.getQuery(), kt);
          // The tile's maximum; m' = max(m, it) is recomputed where read,
          // and m is overwritten last, so that every carried value is
          // updated in place.
          SmallVector<Value> maxInputs{s};
          SmallVector<AffineMap> maxMaps{t.id4(), t.row4()};
          int seenAt = t.withKeyMask(maxInputs, maxMaps, offset);
          Value tileMax = t.generic(
              t.fill(rowShape, -std::numeric_limits<float>::max()), maxInputs,
              maxMaps, {kPar, kPar, kPar, kRed},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                Value x = t.mask(bb, bl, args[0], offset, t.arg(args, seenAt));
                return arith::MaximumFOp::create(bb, bl, x, args.back())
                    .getResult();
              });
          auto newMax = [&](OpBuilder &bb, Location bl, Value old,
                            Value tileValue) {
            return arith::MaximumFOp::create(bb, bl, old, tileValue)
                .getResult();
          };
          // exp(m - m').
          auto rescale = [&](OpBuilder &bb, Location bl, Value old,
                             Value tileValue) {
            return math::ExpOp::create(
                       bb, bl,
                       arith::SubFOp::create(bb, bl, old,
                                             newMax(bb, bl, old, tileValue)))
                .getResult();
          };
          // p = exp(masked s - m').
          SmallVector<Value> pInputs{s, m, tileMax};
          SmallVector<AffineMap> pMaps{t.id4(), t.row4(), t.row4(), t.id4()};
          seenAt = t.withKeyMask(pInputs, pMaps, offset);
          Value p = t.generic(
              t.empty({t.batch, t.heads, t.queries, t.tile}), pInputs, pMaps,
              {kPar, kPar, kPar, kPar},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                Value x = t.mask(bb, bl, args[0], offset, t.arg(args, seenAt));
                Value mx = newMax(bb, bl, args[1], args[2]);
                return math::ExpOp::create(bb, bl,
                                           arith::SubFOp::create(bb, bl, x, mx))
                    .getResult();
              });
          // l' = l * exp(m - m') + sum_j p.
          AffineMap r3 = t.map(3, {0, 1, 2});
          Value lScaled = t.generic(
              l, ValueRange{m, tileMax}, {r3, r3, r3}, {kPar, kPar, kPar},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                return arith::MulFOp::create(bb, bl, args[2],
                                             rescale(bb, bl, args[0], args[1]))
                    .getResult();
              });
          Value lNew =
              t.generic(lScaled, ValueRange{p}, {t.id4(), t.row4()},
                        {kPar, kPar, kPar, kRed},
                        [&](OpBuilder &bb, Location bl, ValueRange args) {
                          return arith::AddFOp::create(bb, bl, args[1], args[0])
                              .getResult();
                        });
          // acc' = acc * exp(m - m') + sum_j p v_t.
          Value accScaled = t.generic(
              acc, ValueRange{m, tileMax},
              {t.rowOfBihe(), t.rowOfBihe(), t.bihe()},
              {kPar, kPar, kPar, kPar},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                return arith::MulFOp::create(bb, bl, args[2],
                                             rescale(bb, bl, args[0], args[1]))
                    .getResult();
              });
          Value accNew = t.generic(
              accScaled, ValueRange{p, vt},
              {t.map(5, {0, 2, 1, 4}), t.map(5, {0, 4, 2, 3}),
               t.map(5, {0, 1, 2, 3})},
              {kPar, kPar, kPar, kPar, kRed},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                Value pv = arith::MulFOp::create(bb, bl, args[0], args[1]);
                return arith::AddFOp::create(bb, bl, args[2], pv).getResult();
              });
          Value mNew =
              t.generic(m, ValueRange{tileMax}, {r3, r3}, {kPar, kPar, kPar},
                        [&](OpBuilder &bb, Location bl, ValueRange args) {
                          return newMax(bb, bl, args[1], args[0]);
                        });
          scf::YieldOp::create(rewriter, nl, ValueRange{mNew, lNew, accNew});
        });
    Value m = loop.getResult(0), l = loop.getResult(1), acc = loop.getResult(2);
    Value out = a.generic(
        a.empty(outShape), ValueRange{acc, l},
        {a.bihe(), a.rowOfBihe(), a.bihe()}, {kPar, kPar, kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          return arith::DivFOp::create(bb, bl, args[0], args[1]).getResult();
        });
    AffineMap r3 = a.map(3, {0, 1, 2});
    Value lse = a.generic(
        a.empty(rowShape), ValueRange{m, l}, {r3, r3, r3}, {kPar, kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          return arith::AddFOp::create(bb, bl, args[0],
                                       math::LogOp::create(bb, bl, args[1]))
              .getResult();
        });
    rewriter.replaceOp(op, ValueRange{out, lse});
    return success();
  }
};

struct AttentionGradToLinalg : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    AttentionBuilder a(rewriter, op);
    Location loc = op.getLoc();
    SmallVector<int64_t> rowShape{a.batch, a.heads, a.queries};
    // delta[b, h, i] = sum_e dout * out - dlse: the sum starts from -dlse.
    Value deltaInit = a.fill(rowShape, 0.0);
    AffineMap r3 = a.map(3, {0, 1, 2});
    if (Value dlse = op.getDlse())
      deltaInit = a.generic(
          a.empty(rowShape), ValueRange{dlse}, {r3, r3}, {kPar, kPar, kPar},
          [&](OpBuilder &bb, Location bl, ValueRange args) {
            return arith::NegFOp::create(bb, bl, args[0]).getResult();
          });
    // Loops (b, h, i, e).
    Value delta = a.generic(
        deltaInit, ValueRange{op.getDout(), op.getOut()},
        {a.map(4, {0, 2, 1, 3}), a.map(4, {0, 2, 1, 3}), a.map(4, {0, 1, 2})},
        {kPar, kPar, kPar, kRed},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          Value prod = arith::MulFOp::create(bb, bl, args[0], args[1]);
          return arith::AddFOp::create(bb, bl, args[2], prod).getResult();
        });
    auto qType = cast<RankedTensorType>(op.getQuery().getType());
    auto kType = cast<RankedTensorType>(op.getKey().getType());
    auto vType = cast<RankedTensorType>(op.getValue().getType());
    Value dq0 = a.fill(qType.getShape(), 0.0);
    // Every key tile of dk and dv is written once.
    Value dk0 = a.empty(kType.getShape());
    Value dv0 = a.empty(vType.getShape());
    auto loop = scf::ForOp::create(
        rewriter, loc, a.index(0), a.index(a.keys), a.index(a.tile),
        ValueRange{dq0, dk0, dv0},
        [&](OpBuilder &, Location nl, Value offset, ValueRange iter) {
          // scf.for builds its body with the builder it is created with:
          // `rewriter`, which `a` builds with, is inside the body here.
          AttentionBuilder &t = a;
          Value kt = t.keyTile(op.getKey(), offset);
          Value vt = t.keyTile(op.getValue(), offset);
          Value s = t.scores(op.getQuery(), kt);
          SmallVector<int64_t> tileShape{t.batch, t.heads, t.queries, t.tile};
          // p = exp(masked s - lse).
          SmallVector<Value> pInputs{s, op.getLse()};
          SmallVector<AffineMap> pMaps{t.id4(), t.row4(), t.id4()};
          int seenAt = t.withKeyMask(pInputs, pMaps, offset);
          Value p = t.generic(
              t.empty(tileShape), pInputs, pMaps, {kPar, kPar, kPar, kPar},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                Value x = t.mask(bb, bl, args[0], offset, t.arg(args, seenAt));
                return math::ExpOp::create(
                           bb, bl, arith::SubFOp::create(bb, bl, x, args[1]))
                    .getResult();
              });
          auto sumOfProducts = [&](OpBuilder &bb, Location bl,
                                   ValueRange args) {
            Value prod = arith::MulFOp::create(bb, bl, args[0], args[1]);
            return arith::AddFOp::create(bb, bl, args[2], prod).getResult();
          };
          auto scaledSum = [&](OpBuilder &bb, Location bl, ValueRange args) {
            Value prod = arith::MulFOp::create(bb, bl, args[0], args[1]);
            Value scaled = arith::MulFOp::create(bb, bl, prod,
                                                 t.constant(bb, bl, t.scale));
            return arith::AddFOp::create(bb, bl, args[2], scaled).getResult();
          };
          // dv_t[b, j, h, e] = sum_i p[b, h, i, j] dout[b, i, h, e]; loops
          // (b, j, h, e, i).
          Value dvt = t.generic(
              t.fill({t.batch, t.tile, t.heads, t.valueFeatures}, 0.0),
              ValueRange{p, op.getDout()},
              {t.map(5, {0, 2, 4, 1}), t.map(5, {0, 4, 2, 3}),
               t.map(5, {0, 1, 2, 3})},
              {kPar, kPar, kPar, kPar, kRed}, sumOfProducts);
          // dp[b, h, i, j] = sum_e dout[b, i, h, e] v_t[b, j, h, e].
          Value dp =
              t.generic(t.fill(tileShape, 0.0), ValueRange{op.getDout(), vt},
                        {t.map(5, {0, 2, 1, 4}), t.map(5, {0, 3, 1, 4}),
                         t.map(5, {0, 1, 2, 3})},
                        {kPar, kPar, kPar, kPar, kRed}, sumOfProducts);
          // ds = p * (dp - delta), zero where masked: a masked score is a
          // constant. (Under a causal mask alone p is zero there: every
          // row sees its own key. With a key mask a row may see none and
          // weigh every key alike.)
          SmallVector<Value> dsInputs{p, dp, delta};
          SmallVector<AffineMap> dsMaps{t.id4(), t.id4(), t.row4(), t.id4()};
          seenAt = t.withKeyMask(dsInputs, dsMaps, offset);
          Value ds = t.generic(
              t.empty(tileShape), dsInputs, dsMaps, {kPar, kPar, kPar, kPar},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                Value diff = arith::SubFOp::create(bb, bl, args[1], args[2]);
                Value d = arith::MulFOp::create(bb, bl, args[0], diff);
                if (seenAt < 0)
                  return d;
                return arith::SelectOp::create(
                           bb, bl, t.hidden(bb, bl, offset, args[seenAt]),
                           t.constant(bb, bl, 0.0), d)
                    .getResult();
              });
          // dq[b, i, h, d] += sum_j ds[b, h, i, j] k_t[b, j, h, d] scale;
          // loops (b, i, h, d, j).
          Value dq = t.generic(iter[0], ValueRange{ds, kt},
                               {t.map(5, {0, 2, 1, 4}), t.map(5, {0, 4, 2, 3}),
                                t.map(5, {0, 1, 2, 3})},
                               {kPar, kPar, kPar, kPar, kRed}, scaledSum);
          // dk_t[b, j, h, d] = sum_i ds[b, h, i, j] q[b, i, h, d] scale;
          // loops (b, j, h, d, i).
          Value dkt =
              t.generic(t.fill({t.batch, t.tile, t.heads, t.features}, 0.0),
                        ValueRange{ds, op.getQuery()},
                        {t.map(5, {0, 2, 4, 1}), t.map(5, {0, 4, 2, 3}),
                         t.map(5, {0, 1, 2, 3})},
                        {kPar, kPar, kPar, kPar, kRed}, scaledSum);
          Value dk = t.insertKeyTile(dkt, iter[1], offset);
          Value dv = t.insertKeyTile(dvt, iter[2], offset);
          scf::YieldOp::create(rewriter, nl, ValueRange{dq, dk, dv});
        });
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

} // namespace

void ga::populateAttentionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionToLinalg, AttentionGradToLinalg>(patterns.getContext());
}
