//===- Chain.cpp - The chain of an attention, generator's form ------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// What both forms of attention end with (the softmax over the scores, the
// optional mask, one float type), and the generator's form
// (examples/gen_tiny_gpt.py): generics throughout, the queries, keys and
// values read in place as [B, S, H, D].
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
using ga::Contraction;
using ga::dimsAre;
using ga::dimsOf;
using ga::hasShape;
using ga::hasUsers;
using ga::matchContraction;
using ga::producer;

/// A generic over [B, H, S, T] whose maps are the identity (and, for a
/// second input, the row [B, H, S]).
bool ga::attention::isScoresRowwise(linalg::GenericOp g, unsigned inputs) {
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
bool ga::attention::isScoresRowReduction(linalg::GenericOp g) {
  if (!hasShape(g, 1, 1) || g.getNumLoops() != 4 ||
      g.getIteratorTypesArray()[3] != utils::IteratorType::reduction)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  return dimsAre(maps[0], {0, 1, 2, 3}) && dimsAre(maps[1], {0, 1, 2});
}

/// probs = exp(s - max_j s) / sum_j exp(s - max_j s) over the last loop of
/// [B, H, S, T], used only by `user`: sets c.maskedScores to s, which only
/// the softmax and `moreReaders` read. The subtraction is in the
/// exponential's generic or a generic of its own.
bool ga::attention::matchScoresSoftmax(Value probsValue, Operation *user,
                                       Chain &c,
                                       ArrayRef<Operation *> moreReaders) {
  linalg::GenericOp probs = producer(probsValue);
  if (!probs || probs.getNumLoops() != 4 || !hasUsers(probsValue, {user}))
    return false;
  std::optional<ga::SoftmaxChain> softmax = ga::matchSoftmax(probs);
  if (!softmax)
    return false;
  SmallVector<Operation *> readers{softmax->rowMax, softmax->difference};
  readers.append(moreReaders.begin(), moreReaders.end());
  if (!hasUsers(softmax->scores, readers))
    return false;
  c.maskedScores = softmax->scores;
  return true;
}

/// An optional mask on `scores`: steps over it (the scores must then have
/// no other reader) and sets what the attention takes of it.
bool ga::attention::unmask(Value &scores, Chain &c) {
  linalg::GenericOp g = producer(scores);
  std::optional<Mask> mask = g ? matchMask(g) : std::nullopt;
  if (!mask)
    return true;
  c.maskedScore = mask->masked;
  c.causal = mask->causal;
  c.keyMask = mask->keyMask;
  scores = mask->scores;
  return scores.hasOneUse();
}

/// The chain's query, key, value and output of one float type.
std::optional<Chain> ga::attention::oneFloatType(Chain &c) {
  Type element = cast<ShapedType>(c.query.source.getType()).getElementType();
  for (Value v : {c.key.source, c.value.source, Value(c.last->getResult(0))})
    if (cast<ShapedType>(v.getType()).getElementType() != element)
      return std::nullopt;
  return c;
}

/// The generator's form (examples/gen_tiny_gpt.py): generics throughout,
/// the queries, keys and values read in place as [B, S, H, D].
std::optional<Chain> ga::attention::matchChain(linalg::GenericOp context) {
  Chain c;
  c.last = context;
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
  c.value.source = context.getDpsInputs()[1];

  if (!matchScoresSoftmax(context.getDpsInputs()[0], context, c))
    return std::nullopt;
  Value scores = c.maskedScores;
  if (!unmask(scores, c))
    return std::nullopt;
  // scores[b, h, i, j] = sum_d query[b, i, h, d] * key[b, j, h, d] * scale.
  linalg::GenericOp product = producer(scores);
  if (!product || product.getNumLoops() != 5)
    return std::nullopt;
  std::optional<Contraction> s = matchContraction(product);
  if (!s)
    return std::nullopt;
  maps = product.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> so = dimsOf(maps[2]);
  r = s->reduction;
  if (!so || so->size() != 4 ||
      !dimsAre(maps[0], {(*so)[0], (*so)[2], (*so)[1], r}) ||
      !dimsAre(maps[1], {(*so)[0], (*so)[3], (*so)[1], r}))
    return std::nullopt;
  c.scale = s->scale;
  c.query.source = product.getDpsInputs()[0];
  c.key.source = product.getDpsInputs()[1];
  return oneFloatType(c);
}
