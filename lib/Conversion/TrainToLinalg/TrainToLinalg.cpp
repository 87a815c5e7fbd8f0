//===- TrainToLinalg.cpp - Lower train loss ops to linalg -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Conversion/TrainToLinalg.h"
#include "ga/Utils/GradientNorms.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "train/TrainOps.h"

using namespace mlir;
using namespace ga::train;
using ga::convertScalar;
using ga::elementwise;
using ga::filledTensor;
using ga::mapScalars;

namespace {

using utils::IteratorType;

/// Sums a 1-D tensor into a 0-d tensor of the same element type, starting
/// from `start` (0-d, that type) or from zero.
Value sumAll(OpBuilder &b, Location loc, Value input, Value start = {}) {
  auto type = cast<RankedTensorType>(input.getType());
  Type element = type.getElementType();
  Value init = start ? start : filledTensor(b, loc, {}, b.getZeroAttr(element));
  MLIRContext *ctx = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  AffineMap scalar = AffineMap::get(1, 0, {}, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{input},
             ValueRange{init}, ArrayRef<AffineMap>{identity, scalar},
             ArrayRef<IteratorType>{IteratorType::reduction},
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value sum =
                   isa<FloatType>(element)
                       ? arith::AddFOp::create(nb, nloc, args[0], args[1])
                             .getResult()
                       : arith::AddIOp::create(nb, nloc, args[0], args[1])
                             .getResult();
               linalg::YieldOp::create(nb, nloc, sum);
             })
      .getResult(0);
}

/// value / count for 0-d tensors (`count` i64), as a 0-d tensor of
/// `floatType`; 0 when count is 0 (the mean over no valid token).
Value divideByCount(OpBuilder &b, Location loc, Value value, Value count,
                    Type floatType) {
  return mapScalars(
      b, loc, ValueRange{value, count}, floatType,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value zeroCount =
            arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0));
        Value none = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                           args[1], zeroCount);
        Value denom = convertScalar(nb, l, args[1], floatType);
        Value ratio = arith::DivFOp::create(nb, l, args[0], denom);
        Value zero =
            arith::ConstantOp::create(nb, l, nb.getZeroAttr(floatType));
        return arith::SelectOp::create(nb, l, none, zero, ratio);
      });
}

/// The type a cross-entropy computes in for logits of `element`: f32 for
/// narrower floats (bf16, f16: their sums over a row or over the tokens
/// would lose the loss's digits), else the logits' own type.
FloatType accumulationType(Type element) {
  auto floatType = cast<FloatType>(element);
  return floatType.getWidth() < 32 ? Float32Type::get(element.getContext())
                                   : floatType;
}

/// The per-row maximum of `logits` [N, V] and the per-row sum of
/// exp(logits - max), in accumulationType: the stable log-sum-exp is
/// log(sum) + max.
std::pair<Value, Value> rowStatistics(OpBuilder &rewriter, Location loc,
                                      Value logits) {
  auto logitsType = cast<RankedTensorType>(logits.getType());
  FloatType floatType = accumulationType(logitsType.getElementType());
  int64_t n = logitsType.getDimSize(0);
  MLIRContext *ctx = rewriter.getContext();
  AffineMap rows2d = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap rowOf2d = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  SmallVector<IteratorType> rowReduction{IteratorType::parallel,
                                         IteratorType::reduction};
  auto rowType = RankedTensorType::get({n}, floatType);
  Value maxInit =
      filledTensor(rewriter, loc, {n},
                   rewriter.getFloatAttr(
                       floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/true)));
  Value rowMax =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{rowType}, ValueRange{logits},
          ValueRange{maxInit}, ArrayRef<AffineMap>{rows2d, rowOf2d},
          rowReduction,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value x = convertScalar(b, l, args[0], floatType);
            linalg::YieldOp::create(
                b, l,
                ValueRange{
                    arith::MaximumFOp::create(b, l, x, args[1]).getResult()});
          })
          .getResult(0);
  Value sumInit =
      filledTensor(rewriter, loc, {n}, rewriter.getZeroAttr(floatType));
  Value sumExp =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{rowType}, ValueRange{logits, rowMax},
          ValueRange{sumInit}, ArrayRef<AffineMap>{rows2d, rowOf2d, rowOf2d},
          rowReduction,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value x = convertScalar(b, l, args[0], floatType);
            Value shifted = arith::SubFOp::create(b, l, x, args[1]);
            Value e = math::ExpOp::create(b, l, shifted);
            linalg::YieldOp::create(
                b, l,
                ValueRange{
                    arith::AddFOp::create(b, l, e, args[2]).getResult()});
          })
          .getResult(0);

  return {rowMax, sumExp};
}

/// 1 where `labels` differs from `ignoreIndex`, as i64 [N].
Value validFlags(OpBuilder &b, Location loc, Value labels,
                 int64_t ignoreIndex) {
  auto type = cast<RankedTensorType>(labels.getType());
  auto labelType = cast<IntegerType>(type.getElementType());
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, b.getContext());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), b.getI64Type());
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{labels},
             ValueRange{init}, ArrayRef<AffineMap>{identity, identity},
             ArrayRef<IteratorType>{IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value ignore = arith::ConstantOp::create(
                   nb, l, nb.getIntegerAttr(labelType, ignoreIndex));
               Value valid = arith::CmpIOp::create(
                   nb, l, arith::CmpIPredicate::ne, args[0], ignore);
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{
                       arith::ExtUIOp::create(nb, l, nb.getI64Type(), valid)
                           .getResult()});
             })
      .getResult(0);
}

/// The column that `label` selects in a row of `numClasses` logits, as an
/// index: 0 for an ignored label, and an invalid one clamped to
/// [0, numClasses) so that reading the logits with it never goes out of
/// bounds (train.check_labels reports invalid labels; see TrainOps.td).
Value labelColumn(OpBuilder &b, Location l, Value label, Value valid,
                  int64_t numClasses) {
  Type labelType = label.getType();
  Value zero = arith::ConstantOp::create(b, l, b.getIntegerAttr(labelType, 0));
  Value last = arith::ConstantOp::create(
      b, l, b.getIntegerAttr(labelType, numClasses - 1));
  Value safe = arith::SelectOp::create(b, l, valid, label, zero);
  Value clamped = arith::MaxSIOp::create(
      b, l, arith::MinSIOp::create(b, l, safe, last), zero);
  return arith::IndexCastOp::create(b, l, b.getIndexType(), clamped);
}

/// The types of a cross-entropy or its gradient: the logits', the type it
/// computes in (accumulationType) and rounds to, and the labels' element.
struct CrossEntropyTypes {
  RankedTensorType logits;
  FloatType result, compute;
  IntegerType label;

  CrossEntropyTypes(Value logitsValue, Value labels)
      : logits(cast<RankedTensorType>(logitsValue.getType())),
        result(cast<FloatType>(logits.getElementType())),
        compute(accumulationType(result)),
        label(cast<IntegerType>(
            cast<RankedTensorType>(labels.getType()).getElementType())) {}
};

/// The row statistics of the logits of a cross-entropy, and its count of
/// valid tokens, computed once for an op and its gradient.
struct CrossEntropyShared {
  Value rowMax, sumExp;
  /// The number of valid tokens (i64, 0-d), or null where not computed.
  Value count;
};

/// The row statistics of `logits`, with no count yet.
CrossEntropyShared statisticsOf(OpBuilder &b, Location loc, Value logits) {
  CrossEntropyShared shared;
  std::tie(shared.rowMax, shared.sumExp) = rowStatistics(b, loc, logits);
  return shared;
}

/// The results of `op` (the loss, then the count if it has one), from the
/// row statistics in `shared`; sets `shared.count` where the op needs it.
SmallVector<Value> buildCrossEntropy(OpBuilder &rewriter, CrossEntropyOp op,
                                     CrossEntropyShared &shared) {
  Location loc = op.getLoc();
  Value logits = op.getLogits();
  Value labels = op.getLabels();
  // Computed in types.compute, rounded to the logits' type at the end.
  CrossEntropyTypes types(logits, labels);
  int64_t n = types.logits.getDimSize(0);
  MLIRContext *ctx = rewriter.getContext();
  Type i64 = rewriter.getI64Type();

  AffineMap rows1d = AffineMap::getMultiDimIdentityMap(1, ctx);
  auto rowType = RankedTensorType::get({n}, types.compute);

  // Per token: the loss (0 if ignored) and a validity flag (i64).
  Value lossInit = tensor::EmptyOp::create(rewriter, loc, {n}, types.compute);
  Value flagInit = tensor::EmptyOp::create(rewriter, loc, {n}, i64);
  int64_t ignoreIndex = static_cast<int64_t>(op.getIgnoreIndex());
  auto perToken = linalg::GenericOp::create(
      rewriter, loc, TypeRange{rowType, flagInit.getType()},
      ValueRange{labels, shared.rowMax, shared.sumExp},
      ValueRange{lossInit, flagInit}, SmallVector<AffineMap>(5, rows1d),
      ArrayRef<IteratorType>{IteratorType::parallel},
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value label = args[0];
        Value ignore = arith::ConstantOp::create(
            b, l, b.getIntegerAttr(types.label, ignoreIndex));
        Value valid = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne,
                                            label, ignore);
        Value column =
            labelColumn(b, l, label, valid, types.logits.getDimSize(1));
        Value row = linalg::IndexOp::create(b, l, 0);
        Value picked = convertScalar(
            b, l,
            tensor::ExtractOp::create(b, l, logits, ValueRange{row, column}),
            types.compute);
        Value logSum = math::LogOp::create(b, l, args[2]);
        Value lse = arith::AddFOp::create(b, l, logSum, args[1]);
        Value loss = arith::SubFOp::create(b, l, lse, picked);
        Value zero =
            arith::ConstantOp::create(b, l, b.getZeroAttr(types.compute));
        Value masked = arith::SelectOp::create(b, l, valid, loss, zero);
        Value flag = arith::ExtUIOp::create(b, l, b.getI64Type(), valid);
        linalg::YieldOp::create(b, l, ValueRange{masked, flag});
      });
  Value tokenLoss = perToken.getResult(0);

  // The reductions over the tokens.
  if (op.getCount() || op.getReduction() == Reduction::Mean)
    shared.count = sumAll(rewriter, loc, perToken.getResult(1));

  Value loss = tokenLoss;
  if (op.getReduction() != Reduction::None) {
    // A sum with an init continues it, token by token.
    Value start = op.getInit();
    if (start && types.result != types.compute)
      start = mapScalars(rewriter, loc, ValueRange{start}, types.compute,
                         [&](OpBuilder &b, Location l, ValueRange args) {
                           return convertScalar(b, l, args[0], types.compute);
                         });
    loss = sumAll(rewriter, loc, tokenLoss, start);
    if (op.getReduction() == Reduction::Mean)
      loss = divideByCount(rewriter, loc, loss, shared.count, types.compute);
  }
  if (types.result != types.compute) {
    auto round = [&](OpBuilder &b, Location l, ValueRange args) {
      return SmallVector<Value>{convertScalar(b, l, args[0], types.result)};
    };
    loss = op.getReduction() == Reduction::None
               ? elementwise(rewriter, loc, {n}, ValueRange{loss}, {},
                             TypeRange{types.result}, round)[0]
               : mapScalars(rewriter, loc, ValueRange{loss}, types.result,
                            [&](OpBuilder &b, Location l, ValueRange args) {
                              return round(b, l, args)[0];
                            });
  }

  SmallVector<Value> results{loss};
  if (Value countResult = op.getCount()) {
    Type element =
        cast<RankedTensorType>(countResult.getType()).getElementType();
    results.push_back(
        mapScalars(rewriter, loc, ValueRange{shared.count}, element,
                   [&](OpBuilder &b, Location l, ValueRange args) {
                     return convertScalar(b, l, args[0], element);
                   }));
  }
  return results;
}

struct CrossEntropyToLinalg : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    if (!cast<ShapedType>(op.getLogits().getType()).hasStaticShape() ||
        !cast<ShapedType>(op.getLabels().getType()).hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes not supported");
    CrossEntropyShared shared =
        statisticsOf(rewriter, op.getLoc(), op.getLogits());
    rewriter.replaceOp(op, buildCrossEntropy(rewriter, op, shared));
    return success();
  }
};

/// The scalar `value` (an f64 attribute value) as a constant of `type`.
Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// Whether the gradient of `op` may be written over its logits: no
/// operation after `op` reads them (the operations before it that do are in
/// its block), and they are the result of an operation of that block, not
/// memory of the caller or of an enclosing loop.
bool gradientMayOverwriteLogits(CrossEntropyGradOp op) {
  Value logits = op.getLogits();
  Operation *definer = logits.getDefiningOp();
  Block *block = op->getBlock();
  if (!definer || definer->getBlock() != block)
    return false;
  for (OpOperand &use : logits.getUses()) {
    if (use.getOwner() == op.getOperation())
      continue;
    Operation *user = block->findAncestorOpInBlock(*use.getOwner());
    if (!user || !user->isBeforeInBlock(op))
      return false;
  }
  return true;
}

/// dlogits = s_i * (softmax(logits[i]) - onehot(labels[i])), s_i = 0 for
/// ignored tokens, s_i = dloss (sum), dloss / n (mean; 0 if n = 0) or
/// dloss[i] (none). Where no later operation reads the logits, the gradient
/// is computed in their place (the generic's init is the logits, read
/// through the init only): after bufferization the [N, V] gradient is the
/// logits' buffer, not a second one.
Value buildCrossEntropyGrad(OpBuilder &rewriter, CrossEntropyGradOp op,
                            const CrossEntropyShared &shared) {
  Location loc = op.getLoc();
  Value logits = op.getLogits();
  Value labels = op.getLabels();
  // Computed in types.compute, rounded to the logits' type.
  CrossEntropyTypes types(logits, labels);
  int64_t ignoreIndex = static_cast<int64_t>(op.getIgnoreIndex());
  MLIRContext *ctx = rewriter.getContext();

  Value scale = op.getDloss();
  if (op.getReduction() == Reduction::Mean) {
    if (types.result != types.compute)
      scale = mapScalars(rewriter, loc, ValueRange{scale}, types.compute,
                         [&](OpBuilder &b, Location l, ValueRange args) {
                           return convertScalar(b, l, args[0], types.compute);
                         });
    Value count = shared.count
                      ? shared.count
                      : sumAll(rewriter, loc,
                               validFlags(rewriter, loc, labels, ignoreIndex));
    scale = divideByCount(rewriter, loc, scale, count, types.compute);
  }

  AffineMap rows2d = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap rowOf2d = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  AffineMap scaleMap = op.getReduction() == Reduction::None
                           ? rowOf2d
                           : AffineMap::get(2, 0, {}, ctx);
  bool inPlace = gradientMayOverwriteLogits(op);
  SmallVector<Value> inputs{labels, shared.rowMax, shared.sumExp, scale};
  SmallVector<AffineMap> maps{rowOf2d, rowOf2d, rowOf2d, scaleMap};
  if (!inPlace) {
    inputs.insert(inputs.begin(), logits);
    maps.insert(maps.begin(), rows2d);
  }
  maps.push_back(rows2d);
  Value init =
      inPlace ? logits
              : tensor::EmptyOp::create(rewriter, loc, types.logits.getShape(),
                                        types.result)
                    .getResult();
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{types.logits}, inputs, ValueRange{init},
             maps,
             ArrayRef<IteratorType>{IteratorType::parallel,
                                    IteratorType::parallel},
             [&](OpBuilder &b, Location l, ValueRange args) {
               // args: [logit,] label, max, sum, scale, init (the logit
               // when in place).
               Value logit = inPlace ? args[4] : args[0];
               ValueRange rest = inPlace ? args : args.drop_front();
               Value label = rest[0];
               Value ignore = arith::ConstantOp::create(
                   b, l, b.getIntegerAttr(types.label, ignoreIndex));
               Value valid = arith::CmpIOp::create(
                   b, l, arith::CmpIPredicate::ne, label, ignore);
               Value shifted = arith::SubFOp::create(
                   b, l, convertScalar(b, l, logit, types.compute), rest[1]);
               Value p = arith::DivFOp::create(
                   b, l, math::ExpOp::create(b, l, shifted), rest[2]);
               Value column =
                   labelColumn(b, l, label, valid, types.logits.getDimSize(1));
               Value j = linalg::IndexOp::create(b, l, 1);
               Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                 column, j);
               Value one = floatConstant(b, l, types.compute, 1.0);
               Value zero = floatConstant(b, l, types.compute, 0.0);
               Value target = arith::SelectOp::create(b, l, hit, one, zero);
               Value g = arith::MulFOp::create(
                   b, l, arith::SubFOp::create(b, l, p, target),
                   convertScalar(b, l, rest[3], types.compute));
               Value masked = arith::SelectOp::create(b, l, valid, g, zero);
               linalg::YieldOp::create(
                   b, l, ValueRange{convertScalar(b, l, masked, types.result)});
             })
      .getResult(0);
}

struct CrossEntropyGradToLinalg : OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!cast<ShapedType>(op.getLogits().getType()).hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes not supported");
    rewriter.replaceOp(
        op,
        buildCrossEntropyGrad(
            rewriter, op, statisticsOf(rewriter, op.getLoc(), op.getLogits())));
    return success();
  }
};

/// sqrt(sum over `inputs` of sum(x^2)) as a 0-d tensor of `element`, the
/// squares summed in float64 (a float32 sum of a model's squared gradients
/// drifts by about sqrt(n) float32 roundings; train-shard-state sums the
/// shards' squares the same way, so both give the norm to float32's
/// precision).
Value globalNorm(OpBuilder &b, Location loc, ValueRange inputs, Type element) {
  return ga::wideNorm(b, loc, inputs, element);
}

/// train.stop_gradient, after differentiation: its operand.
struct StopGradientToOperand : OpRewritePattern<StopGradientOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StopGradientOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

struct GlobalNormToLinalg : OpRewritePattern<GlobalNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GlobalNormOp op,
                                PatternRewriter &rewriter) const override {
    Type element = op.getNorm().getType().getElementType();
    rewriter.replaceOp(
        op, globalNorm(rewriter, op.getLoc(), op.getInputs(), element));
    return success();
  }
};

struct ClipByGlobalNormToLinalg : OpRewritePattern<ClipByGlobalNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ClipByGlobalNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = op.getNorm().getType().getElementType();
    Value norm = globalNorm(rewriter, loc, op.getInputs(), element);
    Value scale = ga::clipScale(rewriter, loc, norm, element,
                                op.getMaxNorm().convertToDouble());
    SmallVector<Value> results;
    for (Value input : op.getInputs())
      results.push_back(ga::scaleBy(rewriter, loc, input, scale, element));
    results.push_back(norm);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct SgdToLinalg : OpRewritePattern<SgdOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SgdOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getParam().getType());
    Type element = type.getElementType();
    double weightDecay = op.getWeightDecay().convertToDouble();
    // new_param = param - lr * (grad + weight_decay * param)
    Value result = elementwise(
        rewriter, op.getLoc(), type.getShape(),
        ValueRange{op.getParam(), op.getGrad()}, ValueRange{op.getLr()},
        TypeRange{element}, [&](OpBuilder &b, Location l, ValueRange args) {
          Value lr = convertScalar(b, l, args[2], element);
          Value decay = arith::MulFOp::create(
              b, l, floatConstant(b, l, element, weightDecay), args[0]);
          Value step = arith::AddFOp::create(b, l, args[1], decay);
          Value scaled = arith::MulFOp::create(b, l, lr, step);
          return SmallVector<Value>{
              arith::SubFOp::create(b, l, args[0], scaled).getResult()};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct AdamWToLinalg : OpRewritePattern<AdamWOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdamWOp op,
                                PatternRewriter &rewriter) const override {
    auto paramType = cast<RankedTensorType>(op.getParam().getType());
    Type pe = paramType.getElementType();
    Type me = cast<RankedTensorType>(op.getM().getType()).getElementType();
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    double eps = op.getEps().convertToDouble();
    double weightDecay = op.getWeightDecay().convertToDouble();
    // Computed in the moments' element type (at least as wide as the
    // parameter's), then the parameter is rounded back to its own type.
    SmallVector<Value> results = elementwise(
        rewriter, op.getLoc(), paramType.getShape(),
        ValueRange{op.getParam(), op.getGrad(), op.getM(), op.getV()},
        ValueRange{op.getLr(), op.getStep()}, TypeRange{pe, me, me},
        [&](OpBuilder &b, Location l, ValueRange args) {
          auto c = [&](double value) { return floatConstant(b, l, me, value); };
          Value p = convertScalar(b, l, args[0], me);
          Value g = convertScalar(b, l, args[1], me);
          Value lr = convertScalar(b, l, args[4], me);
          Value t = convertScalar(b, l, args[5], me);
          Value m = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, c(beta1), args[2]),
              arith::MulFOp::create(b, l, c(1.0 - beta1), g));
          Value g2 = arith::MulFOp::create(b, l, g, g);
          Value v = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, c(beta2), args[3]),
              arith::MulFOp::create(b, l, c(1.0 - beta2), g2));
          Value bc1 = arith::SubFOp::create(
              b, l, c(1.0), math::PowFOp::create(b, l, c(beta1), t));
          Value bc2 = arith::SubFOp::create(
              b, l, c(1.0), math::PowFOp::create(b, l, c(beta2), t));
          Value mHat = arith::DivFOp::create(b, l, m, bc1);
          Value vHat = arith::DivFOp::create(b, l, v, bc2);
          Value denom = arith::AddFOp::create(
              b, l, math::SqrtOp::create(b, l, vHat), c(eps));
          Value update = arith::MulFOp::create(
              b, l, lr, arith::DivFOp::create(b, l, mHat, denom));
          Value decayed = arith::MulFOp::create(
              b, l, p,
              arith::SubFOp::create(
                  b, l, c(1.0),
                  arith::MulFOp::create(b, l, lr, c(weightDecay))));
          Value newP = arith::SubFOp::create(b, l, decayed, update);
          return SmallVector<Value>{convertScalar(b, l, newP, pe), m, v};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void ga::populateTrainToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<CrossEntropyToLinalg, CrossEntropyGradToLinalg,
               GlobalNormToLinalg, ClipByGlobalNormToLinalg, SgdToLinalg,
               AdamWToLinalg, StopGradientToOperand>(patterns.getContext());
  populateAttentionToLinalgPatterns(patterns);
}

void ga::lowerPairedCrossEntropies(Operation *root) {
  SmallVector<CrossEntropyGradOp> grads;
  root->walk([&](CrossEntropyGradOp grad) { grads.push_back(grad); });
  auto isStatic = [](Value value) {
    return cast<ShapedType>(value.getType()).hasStaticShape();
  };
  for (CrossEntropyGradOp grad : grads) {
    if (!isStatic(grad.getLogits()) || !isStatic(grad.getLabels()))
      continue; // the conversion reports it on the op
    CrossEntropyOp forward;
    for (Operation *user : grad.getLogits().getUsers()) {
      auto candidate = dyn_cast<CrossEntropyOp>(user);
      if (candidate && candidate->getBlock() == grad->getBlock() &&
          candidate->isBeforeInBlock(grad) &&
          candidate.getLabels() == grad.getLabels() &&
          candidate.getIgnoreIndex() == grad.getIgnoreIndex()) {
        forward = candidate;
        break;
      }
    }
    if (!forward)
      continue;
    OpBuilder b(forward);
    CrossEntropyShared shared =
        statisticsOf(b, forward.getLoc(), forward.getLogits());
    SmallVector<Value> results = buildCrossEntropy(b, forward, shared);
    forward->replaceAllUsesWith(results);
    forward->erase();
    b.setInsertionPoint(grad);
    Value dlogits = buildCrossEntropyGrad(b, grad, shared);
    grad.getResult().replaceAllUsesWith(dlogits);
    grad->erase();
  }
}
