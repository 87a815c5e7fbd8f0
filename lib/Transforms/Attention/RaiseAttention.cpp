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
// Two forms: the generator's seven generics, and the importer's (PyTorch
// through ga-import and ga-legalize-import), with transposes and batch
// matmuls over [B * H, ...]. The match is structural: each generic's
// indexing maps (in whatever loop order), iterator kinds and body, and each
// intermediate used only by the next step of the chain. A causal mask is
// checked by value: its condition is traced to a function of the position
// and evaluated at every (query, key).
//
// The forms are matched in lib/Transforms/Attention/ (Chain.cpp,
// ImportForm.cpp, Mask.cpp); this file is the pass.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "ga/Transforms/Passes.h"
#include "ga/Utils/LinalgMatchers.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINRAISEATTENTIONPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::attention;

namespace {

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
    getOperation()->walk([&](Operation *op) {
      std::optional<Chain> chain;
      if (auto g = dyn_cast<linalg::GenericOp>(op))
        chain = matchChain(g);
      else if (auto matmul = dyn_cast<linalg::BatchMatmulOp>(op))
        chain = matchImportChain(matmul);
      if (chain)
        chains.push_back(*chain);
    });
    for (Chain &c : chains)
      raise(c);
    if (!report)
      return;
    // What stays as written: a softmax over [B, H, S, T] scores that no
    // chain took.
    getOperation()->walk([&](linalg::GenericOp g) {
      std::optional<ga::SoftmaxChain> softmax = ga::matchSoftmax(g);
      if (!softmax)
        return;
      auto type = dyn_cast<RankedTensorType>(softmax->scores.getType());
      if (!type || type.getRank() != 4)
        return;
      mlir::emitRemark(g.getLoc())
          << "attention left as written: a softmax over " << type
          << " scores that train-raise-attention does not "
             "recognize as attention (its mask or the products "
             "around it are not a form it raises); the scores "
             "are stored for the backward pass";
    });
  }

  /// The operand in the layout train.attention takes, [B, X, H, Y].
  static Value materialize(OpBuilder &b, Location loc, const HeadOperand &o) {
    Value v = o.source;
    if (o.layout == HeadOperand::Grouped)
      v = tensor::CollapseShapeOp::create(
          b, loc, v, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    if (o.layout == HeadOperand::PositionMajor)
      return v;
    auto type = cast<RankedTensorType>(v.getType());
    ArrayRef<int64_t> shape = type.getShape();
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{shape[0], shape[2], shape[1], shape[3]},
        type.getElementType());
    return linalg::TransposeOp::create(b, loc, v, init,
                                       ArrayRef<int64_t>{0, 2, 1, 3})
        ->getResult(0);
  }

  void raise(Chain &c) {
    OpBuilder b(c.last);
    Location loc = c.last->getLoc();
    Value q = materialize(b, loc, c.query), k = materialize(b, loc, c.key),
          v = materialize(b, loc, c.value);
    auto query = cast<RankedTensorType>(q.getType());
    auto key = cast<RankedTensorType>(k.getType());
    auto lseType = RankedTensorType::get(
        {query.getDimSize(0), query.getDimSize(2), query.getDimSize(1)},
        query.getElementType());
    auto attention = ga::train::AttentionOp::create(
        b, loc, TypeRange{c.last->getResult(0).getType(), lseType}, q, k, v,
        c.keyMask, b.getF64FloatAttr(c.scale),
        c.causal ? b.getUnitAttr() : nullptr,
        b.getF64FloatAttr(c.maskedScore.value_or(-1.0e9)),
        b.getI64IntegerAttr(largestDivisorAtMost(key.getDimSize(1), keyTile)),
        b.getI64IntegerAttr(
            largestDivisorAtMost(query.getDimSize(1), keyTile)));
    if (report)
      mlir::emitRemark(attention.getLoc())
          << "attention raised to train.attention ("
          << (c.causal && c.keyMask ? "causal, key mask"
              : c.causal            ? "causal"
              : c.keyMask           ? "key mask"
                                    : "no mask")
          << ", " << query.getDimSize(2) << " heads of " << query.getDimSize(3)
          << " features)";
    c.last->getResult(0).replaceAllUsesWith(attention.getOut());
    // The chain, from the last, with its fills and empty tensors: each
    // intermediate had its successor for only user.
    ga::eraseWithDeadProducers(c.last);
  }
};

} // namespace
