//===- AttentionToLinalg.cpp - train.attention over key tiles -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train.attention and train.attention_grad become scf.for loops over tiles
// of queries and keys whose bodies are linalg on tensors, so that no [B, H,
// S, T] tensor is made: the largest is [B, H, query_tile, key_tile]. A
// causal attention visits only the tiles on and below the diagonal: the
// query tile at q0 reads the keys before q0 + query_tile, and the key tile
// at k0 is read by the queries from the query tile that holds k0 on.
//
// Forward, per query tile (online softmax): per row a running maximum m
// and sum l, and the unnormalized output; at each key tile
//   m' = max(m, max_j s),  p = exp(s - m'),  a = exp(m - m'),
//   l' = l * a + sum_j p,  acc' = acc * a + sum_j p v;
// after the last, out = acc / l and lse = m + log(l).
//
// Backward, per key tile (recomputing per query tile): delta = sum_e dout
// out - dlse, then at each query tile p = exp(s - lse), dv_t += p^T dout,
// ds = p (dout v_t^T - delta), dq_q += ds k_t scale, dk_t += ds^T q_q
// scale.
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
  int64_t batch, queries, heads, features, keys, valueFeatures, tile, qtile;
  double scale, maskedScore;
  bool causal;
  /// [B, T], 1 where the key mask shows the key and 0 where it hides it
  /// (made once, before the loops, from the op's i1 key mask); null
  /// without one.
  Value keep;

  template <typename OpTy>
  AttentionBuilder(OpBuilder &b, OpTy op)
      : b(b), loc(op.getLoc()), scale(op.getScale().convertToDouble()),
        maskedScore(op.getMaskedScore().convertToDouble()),
        causal(op.getCausal()) {
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
    qtile = op.getQueryTile() > 0 ? op.getQueryTile() : queries;
    if (Value keyMask = op.getKeyMask())
      keep = generic(empty({batch, keys}), ValueRange{keyMask},
                     {map(2, {0, 1}), map(2, {0, 1})}, {kPar, kPar},
                     [&](OpBuilder &nb, Location nl, ValueRange args) {
                       return arith::SelectOp::create(nb, nl, args[0],
                                                      constant(nb, nl, 1.0),
                                                      constant(nb, nl, 0.0))
                           .getResult();
                     });
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

  Value slice(Value tensor, unsigned dim, Value offset, int64_t size) {
    return ga::sliceAlong(b, loc, tensor, dim, offset, size);
  }
  Value insert(Value part, Value into, unsigned dim, Value offset) {
    return ga::insertAlong(b, loc, part, into, dim, offset);
  }
  /// The key tile at `offset` of `tensor` [B, T, H, X].
  Value keyTile(Value tensor, Value offset) {
    return slice(tensor, 1, offset, tile);
  }
  /// The query tile at `offset` of `tensor` [B, S, H, X].
  Value queryTile(Value tensor, Value offset) {
    return slice(tensor, 1, offset, qtile);
  }
  /// The query tile at `offset` of a row statistic [B, H, S].
  Value rowTile(Value tensor, Value offset) {
    return slice(tensor, 2, offset, qtile);
  }

  /// The end of the keys that the query tile at `queryOffset` sees: all
  /// keys, or with `causal` those up to its last query, rounded up to a
  /// whole key tile.
  Value keyEnd(Value queryOffset) {
    if (!causal)
      return index(keys);
    Value last =
        arith::AddIOp::create(b, loc, queryOffset, index(qtile - 1 + tile));
    Value tiles = arith::DivUIOp::create(b, loc, last, index(tile));
    Value end = arith::MulIOp::create(b, loc, tiles, index(tile));
    return arith::MinUIOp::create(b, loc, end, index(keys));
  }
  /// The first query that sees a key of the tile at `keyOffset`: the first
  /// query, or with `causal` that of the query tile holding the key.
  Value queryBegin(Value keyOffset) {
    if (!causal)
      return index(0);
    Value tiles = arith::DivUIOp::create(b, loc, keyOffset, index(qtile));
    return arith::MulIOp::create(b, loc, tiles, index(qtile));
  }

  /// The masks of the tile pair at (queryOffset, offset), as float tiles
  /// that the tile's generics read (their bodies then hold neither
  /// linalg.index nor i1 tensors, and vectorize): `bias` [query_tile,
  /// key_tile], -inf where the key comes after the query and 0 elsewhere
  /// (with `causal`), made by a small generic of its own, and the key
  /// tile of `keep` [B, key_tile] (with a key mask).
  struct Masks {
    Value bias, keep;
  };
  Masks masks(Value queryOffset, Value offset) {
    Masks m;
    if (causal)
      m.bias = generic(
          empty({qtile, tile}), ValueRange{}, {map(2, {0, 1})}, {kPar, kPar},
          [&](OpBuilder &nb, Location nl, ValueRange) {
            Value i = linalg::IndexOp::create(nb, nl, 0);
            Value j = linalg::IndexOp::create(nb, nl, 1);
            Value query = arith::AddIOp::create(nb, nl, i, queryOffset);
            Value key = arith::AddIOp::create(nb, nl, j, offset);
            Value after = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::ugt, key, query);
            return arith::SelectOp::create(
                       nb, nl, after,
                       constant(nb, nl,
                                -std::numeric_limits<double>::infinity()),
                       constant(nb, nl, 0.0))
                .getResult();
          });
    if (keep)
      m.keep = slice(keep, 1, offset, tile);
    return m;
  }

  /// The body arguments of the masks in a generic over (b, h, i, j).
  struct MaskArgs {
    int bias = -1, keep = -1;
  };
  /// Appends the masks to a generic's `inputs` and `maps` (the output's
  /// map last).
  MaskArgs withMasks(const Masks &m, SmallVectorImpl<Value> &inputs,
                     SmallVectorImpl<AffineMap> &maps) {
    MaskArgs at;
    if (m.bias) {
      inputs.push_back(m.bias);
      maps.insert(maps.end() - 1, map(4, {2, 3}));
      at.bias = static_cast<int>(inputs.size()) - 1;
    }
    if (m.keep) {
      inputs.push_back(m.keep);
      maps.insert(maps.end() - 1, map(4, {0, 3}));
      at.keep = static_cast<int>(inputs.size()) - 1;
    }
    return at;
  }

  /// The score as the softmax takes it: masked_score where the key mask
  /// hides the key, -inf after the query (no part of its softmax, so that
  /// the tiles after the diagonal need not be visited): select(keep == 0,
  /// masked_score, s) + bias, the bias 0 or -inf.
  Value mask(OpBuilder &nb, Location nl, Value score, ValueRange args,
             MaskArgs at) {
    if (at.keep >= 0) {
      Value unseen =
          arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                args[at.keep], constant(nb, nl, 0.0));
      score = arith::SelectOp::create(nb, nl, unseen,
                                      constant(nb, nl, maskedScore), score);
    }
    if (at.bias >= 0)
      score = arith::AddFOp::create(nb, nl, score, args[at.bias]);
    return score;
  }
  /// Whether either mask hides the key; null when there is none.
  Value hidden(OpBuilder &nb, Location nl, ValueRange args, MaskArgs at) {
    Value hide;
    if (at.bias >= 0)
      hide = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT,
                                   args[at.bias], constant(nb, nl, 0.0));
    if (at.keep >= 0) {
      Value unseen =
          arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                args[at.keep], constant(nb, nl, 0.0));
      hide = hide ? arith::OrIOp::create(nb, nl, hide, unseen).getResult()
                  : unseen;
    }
    return hide;
  }

  /// s[b, h, i, j] = sum_d (q_q[b, i, h, d] * k_t[b, j, h, d]) * scale.
  Value scores(Value queryTileValue, Value keyTileValue) {
    return generic(
        fill({batch, heads, qtile, tile}, 0.0),
        ValueRange{queryTileValue, keyTileValue},
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

  /// One key tile of the online softmax for one query tile `qt`: the
  /// row maxima, sums and output accumulators `iter` (m, l, acc) updated.
  static SmallVector<Value> forwardTile(AttentionBuilder &t, AttentionOp op,
                                        Value qt, Value queryOffset,
                                        Value offset, ValueRange iter,
                                        ArrayRef<int64_t> rowShape) {
    Value m = iter[0], l = iter[1], acc = iter[2];
    Value kt = t.keyTile(op.getKey(), offset);
    Value vt = t.keyTile(op.getValue(), offset);
    Value s = t.scores(qt, kt);
    // The tile's maximum; m' = max(m, it) is recomputed where
    // read, and m is overwritten last, so that every carried
    // value is updated in place.
    AttentionBuilder::Masks masks = t.masks(queryOffset, offset);
    SmallVector<Value> maxInputs{s};
    SmallVector<AffineMap> maxMaps{t.id4(), t.row4()};
    AttentionBuilder::MaskArgs maxAt = t.withMasks(masks, maxInputs, maxMaps);
    Value tileMax = t.generic(
        t.fill(rowShape, -std::numeric_limits<float>::max()), maxInputs,
        maxMaps, {kPar, kPar, kPar, kRed},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          Value x = t.mask(bb, bl, args[0], args, maxAt);
          return arith::MaximumFOp::create(bb, bl, x, args.back()).getResult();
        });
    auto newMax = [&](OpBuilder &bb, Location bl, Value old, Value tileValue) {
      return arith::MaximumFOp::create(bb, bl, old, tileValue).getResult();
    };
    // exp(m - m').
    auto rescale = [&](OpBuilder &bb, Location bl, Value old, Value tileValue) {
      return math::ExpOp::create(
                 bb, bl,
                 arith::SubFOp::create(bb, bl, old,
                                       newMax(bb, bl, old, tileValue)))
          .getResult();
    };
    // p = exp(masked s - m').
    SmallVector<Value> pInputs{s, m, tileMax};
    SmallVector<AffineMap> pMaps{t.id4(), t.row4(), t.row4(), t.id4()};
    AttentionBuilder::MaskArgs pAt = t.withMasks(masks, pInputs, pMaps);
    Value p =
        t.generic(t.empty({t.batch, t.heads, t.qtile, t.tile}), pInputs, pMaps,
                  {kPar, kPar, kPar, kPar},
                  [&](OpBuilder &bb, Location bl, ValueRange args) {
                    Value x = t.mask(bb, bl, args[0], args, pAt);
                    Value mx = newMax(bb, bl, args[1], args[2]);
                    return math::ExpOp::create(
                               bb, bl, arith::SubFOp::create(bb, bl, x, mx))
                        .getResult();
                  });
    // x * exp(m - m') for each x of `init` (the row's l, or
    // its acc).
    auto rescaled = [&](Value init, AffineMap row, AffineMap out) {
      return t.generic(init, ValueRange{m, tileMax}, {row, row, out},
                       SmallVector<IteratorType>(out.getNumDims(), kPar),
                       [&](OpBuilder &bb, Location bl, ValueRange args) {
                         return arith::MulFOp::create(
                                    bb, bl, args[2],
                                    rescale(bb, bl, args[0], args[1]))
                             .getResult();
                       });
    };
    // l' = l * exp(m - m') + sum_j p.
    AffineMap r3 = t.map(3, {0, 1, 2});
    Value lScaled = rescaled(l, r3, r3);
    Value lNew = t.generic(
        lScaled, ValueRange{p}, {t.id4(), t.row4()}, {kPar, kPar, kPar, kRed},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          return arith::AddFOp::create(bb, bl, args[1], args[0]).getResult();
        });
    // acc' = acc * exp(m - m') + sum_j p v_t.
    Value accScaled = rescaled(acc, t.rowOfBihe(), t.bihe());
    Value accNew = t.generic(
        accScaled, ValueRange{p, vt},
        {t.map(5, {0, 2, 1, 4}), t.map(5, {0, 4, 2, 3}),
         t.map(5, {0, 1, 2, 3})},
        {kPar, kPar, kPar, kPar, kRed},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          Value pv = arith::MulFOp::create(bb, bl, args[0], args[1]);
          return arith::AddFOp::create(bb, bl, args[2], pv).getResult();
        });
    Value mNew = t.generic(m, ValueRange{tileMax}, {r3, r3}, {kPar, kPar, kPar},
                           [&](OpBuilder &bb, Location bl, ValueRange args) {
                             return newMax(bb, bl, args[1], args[0]);
                           });
    return {mNew, lNew, accNew};
  }

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    AttentionBuilder a(rewriter, op);
    Location loc = op.getLoc();
    SmallVector<int64_t> rowShape{a.batch, a.heads, a.qtile};
    SmallVector<int64_t> outTileShape{a.batch, a.qtile, a.heads,
                                      a.valueFeatures};
    Value out0 = a.empty({a.batch, a.queries, a.heads, a.valueFeatures});
    Value lse0 = a.empty({a.batch, a.heads, a.queries});
    auto queries = scf::ForOp::create(
        rewriter, loc, a.index(0), a.index(a.queries), a.index(a.qtile),
        ValueRange{out0, lse0},
        [&](OpBuilder &, Location ql, Value queryOffset, ValueRange outer) {
          // scf.for builds its body with the builder it is created with:
          // `rewriter`, which `a` builds with, is inside the body here.
          AttentionBuilder &t = a;
          Value qt = t.queryTile(op.getQuery(), queryOffset);
          Value m0 = t.fill(rowShape, -std::numeric_limits<float>::max());
          Value l0 = t.fill(rowShape, 0.0);
          Value acc0 = t.fill(outTileShape, 0.0);
          auto keys = scf::ForOp::create(
              rewriter, ql, t.index(0), t.keyEnd(queryOffset), t.index(t.tile),
              ValueRange{m0, l0, acc0},
              [&](OpBuilder &, Location nl, Value offset, ValueRange iter) {
                SmallVector<Value> next =
                    forwardTile(t, op, qt, queryOffset, offset, iter, rowShape);
                scf::YieldOp::create(rewriter, nl, next);
              });
          Value m = keys.getResult(0), l = keys.getResult(1),
                acc = keys.getResult(2);
          Value outTile = t.generic(
              t.empty(outTileShape), ValueRange{acc, l},
              {t.bihe(), t.rowOfBihe(), t.bihe()}, {kPar, kPar, kPar, kPar},
              [&](OpBuilder &bb, Location bl, ValueRange args) {
                return arith::DivFOp::create(bb, bl, args[0], args[1])
                    .getResult();
              });
          AffineMap r3 = t.map(3, {0, 1, 2});
          Value lseTile =
              t.generic(t.empty(rowShape), ValueRange{m, l}, {r3, r3, r3},
                        {kPar, kPar, kPar},
                        [&](OpBuilder &bb, Location bl, ValueRange args) {
                          return arith::AddFOp::create(
                                     bb, bl, args[0],
                                     math::LogOp::create(bb, bl, args[1]))
                              .getResult();
                        });
          Value out = t.insert(outTile, outer[0], 1, queryOffset);
          Value lse = t.insert(lseTile, outer[1], 2, queryOffset);
          scf::YieldOp::create(rewriter, ql, ValueRange{out, lse});
        });
    rewriter.replaceOp(op, queries.getResults());
    return success();
  }
};

struct AttentionGradToLinalg : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  /// One query tile of the backward pass over key tile (`kt`, `vt`): the
  /// gradients `iter` (dq, and the tile's dk and dv) updated, from the
  /// probabilities recomputed with the saved log-sum-exp.
  static SmallVector<Value> backwardTile(AttentionBuilder &t,
                                         AttentionGradOp op, Value kt, Value vt,
                                         Value delta, Value queryOffset,
                                         Value offset, ValueRange iter) {
    auto sumOfProducts = [&](OpBuilder &bb, Location bl, ValueRange args) {
      Value prod = arith::MulFOp::create(bb, bl, args[0], args[1]);
      return arith::AddFOp::create(bb, bl, args[2], prod).getResult();
    };
    auto scaledSum = [&](OpBuilder &bb, Location bl, ValueRange args) {
      Value prod = arith::MulFOp::create(bb, bl, args[0], args[1]);
      Value scaled =
          arith::MulFOp::create(bb, bl, prod, t.constant(bb, bl, t.scale));
      return arith::AddFOp::create(bb, bl, args[2], scaled).getResult();
    };
    Value qt = t.queryTile(op.getQuery(), queryOffset);
    Value doutTile = t.queryTile(op.getDout(), queryOffset);
    Value lseTile = t.rowTile(op.getLse(), queryOffset);
    Value deltaTile = t.rowTile(delta, queryOffset);
    Value s = t.scores(qt, kt);
    SmallVector<int64_t> tileShape{t.batch, t.heads, t.qtile, t.tile};
    // p = exp(masked s - lse).
    AttentionBuilder::Masks masks = t.masks(queryOffset, offset);
    SmallVector<Value> pInputs{s, lseTile};
    SmallVector<AffineMap> pMaps{t.id4(), t.row4(), t.id4()};
    AttentionBuilder::MaskArgs pAt = t.withMasks(masks, pInputs, pMaps);
    Value p = t.generic(
        t.empty(tileShape), pInputs, pMaps, {kPar, kPar, kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          Value x = t.mask(bb, bl, args[0], args, pAt);
          return math::ExpOp::create(bb, bl,
                                     arith::SubFOp::create(bb, bl, x, args[1]))
              .getResult();
        });
    // dv_t[b, j, h, e] += sum_i p[b, h, i, j] dout[b, i, h, e];
    // loops (b, j, h, e, i).
    Value dvt = t.generic(iter[2], ValueRange{p, doutTile},
                          {t.map(5, {0, 2, 4, 1}), t.map(5, {0, 4, 2, 3}),
                           t.map(5, {0, 1, 2, 3})},
                          {kPar, kPar, kPar, kPar, kRed}, sumOfProducts);
    // dp[b, h, i, j] = sum_e dout[b, i, h, e] v_t[b, j, h, e].
    Value dp = t.generic(t.fill(tileShape, 0.0), ValueRange{doutTile, vt},
                         {t.map(5, {0, 2, 1, 4}), t.map(5, {0, 3, 1, 4}),
                          t.map(5, {0, 1, 2, 3})},
                         {kPar, kPar, kPar, kPar, kRed}, sumOfProducts);
    // ds = p * (dp - delta), zero where masked: a masked score
    // is a constant. (Under a causal mask alone p is zero
    // there: every row sees its own key. With a key mask a row
    // may see no key and weigh every key alike.)
    SmallVector<Value> dsInputs{p, dp, deltaTile};
    SmallVector<AffineMap> dsMaps{t.id4(), t.id4(), t.row4(), t.id4()};
    // (The causal bias alone needs nothing here.)
    AttentionBuilder::MaskArgs dsAt;
    if (masks.keep)
      dsAt = t.withMasks(masks, dsInputs, dsMaps);
    Value ds = t.generic(
        t.empty(tileShape), dsInputs, dsMaps, {kPar, kPar, kPar, kPar},
        [&](OpBuilder &bb, Location bl, ValueRange args) {
          Value diff = arith::SubFOp::create(bb, bl, args[1], args[2]);
          Value d = arith::MulFOp::create(bb, bl, args[0], diff);
          Value hide = t.hidden(bb, bl, args, dsAt);
          if (!hide)
            return d;
          return arith::SelectOp::create(bb, bl, hide, t.constant(bb, bl, 0.0),
                                         d)
              .getResult();
        });
    // dq_q[b, i, h, d] += sum_j ds[b, h, i, j] k_t[b, j, h, d]
    // scale; loops (b, i, h, d, j).
    Value dqTile =
        t.generic(t.queryTile(iter[0], queryOffset), ValueRange{ds, kt},
                  {t.map(5, {0, 2, 1, 4}), t.map(5, {0, 4, 2, 3}),
                   t.map(5, {0, 1, 2, 3})},
                  {kPar, kPar, kPar, kPar, kRed}, scaledSum);
    Value dq = t.insert(dqTile, iter[0], 1, queryOffset);
    // dk_t[b, j, h, d] += sum_i ds[b, h, i, j] q_q[b, i, h, d]
    // scale; loops (b, j, h, d, i).
    Value dkt = t.generic(iter[1], ValueRange{ds, qt},
                          {t.map(5, {0, 2, 4, 1}), t.map(5, {0, 4, 2, 3}),
                           t.map(5, {0, 1, 2, 3})},
                          {kPar, kPar, kPar, kPar, kRed}, scaledSum);
    return {dq, dkt, dvt};
  }

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
    auto keys = scf::ForOp::create(
        rewriter, loc, a.index(0), a.index(a.keys), a.index(a.tile),
        ValueRange{dq0, dk0, dv0},
        [&](OpBuilder &, Location kl, Value offset, ValueRange outer) {
          // scf.for builds its body with the builder it is created with:
          // `rewriter`, which `a` builds with, is inside the body here.
          AttentionBuilder &t = a;
          Value kt = t.keyTile(op.getKey(), offset);
          Value vt = t.keyTile(op.getValue(), offset);
          Value dkt0 = t.fill({t.batch, t.tile, t.heads, t.features}, 0.0);
          Value dvt0 = t.fill({t.batch, t.tile, t.heads, t.valueFeatures}, 0.0);
          auto queries = scf::ForOp::create(
              rewriter, kl, t.queryBegin(offset), t.index(t.queries),
              t.index(t.qtile), ValueRange{outer[0], dkt0, dvt0},
              [&](OpBuilder &, Location nl, Value queryOffset,
                  ValueRange iter) {
                SmallVector<Value> next = backwardTile(
                    t, op, kt, vt, delta, queryOffset, offset, iter);
                scf::YieldOp::create(rewriter, nl, next);
              });
          Value dk = t.insert(queries.getResult(1), outer[1], 1, offset);
          Value dv = t.insert(queries.getResult(2), outer[2], 1, offset);
          scf::YieldOp::create(rewriter, kl,
                               ValueRange{queries.getResult(0), dk, dv});
        });
    rewriter.replaceOp(op, keys.getResults());
    return success();
  }
};

} // namespace

void ga::populateAttentionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionToLinalg, AttentionGradToLinalg>(patterns.getContext());
}
