//===- ComputeOps.cpp - The train dialect's computing operations ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The verifiers of the operations that compute (the loss, attention, norms,
// the optimizers' updates, the label checks); the step, its checkpoints,
// its accumulation and its reductions across ranks are in TrainOps.cpp.
// Every error message is covered by test/Dialect/Train/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "Verify.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace ga::train;
using namespace ga::train::verify;

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::verify() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  auto labels = cast<RankedTensorType>(getLabels().getType());
  if (logits.getRank() != 2 || !isa<FloatType>(logits.getElementType()))
    return emitOpError() << "logits must be a rank-2 float tensor [N, V], got "
                         << logits;
  if (labels.getRank() != 1 || !isa<IntegerType>(labels.getElementType()))
    return emitOpError() << "labels must be a rank-1 integer tensor [N], got "
                         << labels;
  int64_t n = logits.getDimSize(0);
  if (!ShapedType::isDynamic(n) && !labels.isDynamicDim(0) &&
      labels.getDimSize(0) != n)
    return emitOpError() << "logits have N = " << n << " rows but labels have "
                         << labels.getDimSize(0) << " elements";

  int64_t numClasses = logits.getDimSize(1);
  int64_t ignore = getIgnoreIndex();
  if (!ShapedType::isDynamic(numClasses) && ignore >= 0 && ignore < numClasses)
    return emitOpError() << "ignore_index = " << ignore
                         << " is a valid class index in [0, " << numClasses
                         << "): real tokens of that class would be ignored";

  Type elementType = logits.getElementType();
  RankedTensorType expectedLoss = getReduction() == Reduction::None
                                      ? RankedTensorType::get({n}, elementType)
                                      : RankedTensorType::get({}, elementType);
  if (getLoss().getType() != expectedLoss)
    return emitOpError() << "with reduction = "
                         << stringifyReduction(getReduction())
                         << " the loss must be " << expectedLoss << ", got "
                         << getLoss().getType();
  if (Value init = getInit()) {
    if (getReduction() != Reduction::Sum)
      return emitOpError() << "has an init, which only reduction = sum "
                              "accepts (a mean or per-token loss does not "
                              "continue a running sum)";
    if (init.getType() != getLoss().getType())
      return emitOpError() << "init must have the loss's type "
                           << getLoss().getType() << ", got " << init.getType();
  }
  if (Value count = getCount())
    if (!isIntOrFloatScalarTensor(count.getType()))
      return emitOpError()
             << "the valid-token count must be a 0-d integer or float tensor, "
                "got "
             << count.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyGradOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyGradOp::verify() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  auto labels = cast<RankedTensorType>(getLabels().getType());
  if (logits.getRank() != 2 || !isa<FloatType>(logits.getElementType()))
    return emitOpError() << "logits must be a rank-2 float tensor [N, V], got "
                         << logits;
  if (labels.getRank() != 1 || !isa<IntegerType>(labels.getElementType()) ||
      labels.getDimSize(0) != logits.getDimSize(0))
    return emitOpError() << "labels must be a rank-1 integer tensor of "
                         << logits.getDimSize(0) << " elements, got " << labels;
  Type elementType = logits.getElementType();
  RankedTensorType expectedDLoss =
      getReduction() == Reduction::None
          ? RankedTensorType::get({logits.getDimSize(0)}, elementType)
          : RankedTensorType::get({}, elementType);
  if (getDloss().getType() != expectedDLoss)
    return emitOpError() << "with reduction = "
                         << stringifyReduction(getReduction())
                         << " dloss must be " << expectedDLoss << ", got "
                         << getDloss().getType();
  if (getDlogits().getType() != logits)
    return emitOpError() << "dlogits must have the logits' type " << logits
                         << ", got " << getDlogits().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp, AttentionGradOp
//===----------------------------------------------------------------------===//

/// Checks what train.attention and its gradient share: the operands'
/// shapes and types, the attributes, and the types of `outValue` and
/// `lseValue` (the forward's results; the gradient's operands), which it
/// also returns.
static LogicalResult
verifyAttentionOperands(Operation *op, Value query, Value key, Value value,
                        Value keyMask, bool causal, int64_t keyTile,
                        int64_t queryTile, Value outValue, Value lseValue,
                        RankedTensorType &out, RankedTensorType &lse) {
  auto emit = [&]() { return op->emitOpError(); };
  auto q = cast<RankedTensorType>(query.getType());
  auto k = cast<RankedTensorType>(key.getType());
  auto v = cast<RankedTensorType>(value.getType());
  const char *names[] = {"query", "key", "value"};
  RankedTensorType types[] = {q, k, v};
  for (auto [name, type] : llvm::zip(names, types)) {
    if (type.getRank() != 4 || !isa<FloatType>(type.getElementType()) ||
        !type.hasStaticShape())
      return emit() << name
                    << " must be a static rank-4 float tensor [batch, "
                       "position, head, feature], got "
                    << type;
    if (type.getElementType() != q.getElementType())
      return emit() << name << " must have the query's element type "
                    << q.getElementType() << ", got " << type;
  }
  if (k.getDimSize(0) != q.getDimSize(0) ||
      k.getDimSize(2) != q.getDimSize(2) || k.getDimSize(3) != q.getDimSize(3))
    return emit() << "key must have the query's batch, heads and features "
                     "(["
                  << q.getDimSize(0) << ", T, " << q.getDimSize(2) << ", "
                  << q.getDimSize(3) << "]), got " << k;
  if (v.getDimSize(0) != k.getDimSize(0) ||
      v.getDimSize(1) != k.getDimSize(1) || v.getDimSize(2) != k.getDimSize(2))
    return emit() << "value must have the key's batch, positions and heads (["
                  << k.getDimSize(0) << ", " << k.getDimSize(1) << ", "
                  << k.getDimSize(2) << ", E]), got " << v;
  if (keyMask) {
    auto mask = cast<RankedTensorType>(keyMask.getType());
    auto expected =
        RankedTensorType::get({k.getDimSize(0), k.getDimSize(1)},
                              IntegerType::get(op->getContext(), 1));
    if (mask != expected)
      return emit() << "key_mask must be " << expected
                    << " [batch, key] (true where the key is seen), got "
                    << mask;
  }
  if (causal && k.getDimSize(1) != q.getDimSize(1))
    return emit() << "is causal but has " << q.getDimSize(1) << " queries and "
                  << k.getDimSize(1)
                  << " keys (causal attention needs as many of each)";
  if (keyTile < 0 || (keyTile > 0 && k.getDimSize(1) % keyTile != 0))
    return emit() << "key_tile = " << keyTile
                  << " must be 0 (one tile) or divide the " << k.getDimSize(1)
                  << " keys";
  if (queryTile < 0 || (queryTile > 0 && q.getDimSize(1) % queryTile != 0))
    return emit() << "query_tile = " << queryTile
                  << " must be 0 (one tile) or divide the " << q.getDimSize(1)
                  << " queries";
  out = RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)},
      q.getElementType());
  lse = RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(2), q.getDimSize(1)}, q.getElementType());
  if (outValue.getType() != out)
    return emit() << "out must be " << out << ", got " << outValue.getType();
  if (lseValue.getType() != lse)
    return emit() << "lse must be " << lse << " [batch, head, query], got "
                  << lseValue.getType();
  return success();
}

LogicalResult AttentionOp::verify() {
  RankedTensorType out, lse;
  return verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                 getKeyMask(), getCausal(), getKeyTile(),
                                 getQueryTile(), getOut(), getLse(), out, lse);
}

LogicalResult AttentionGradOp::verify() {
  RankedTensorType out, lse;
  if (failed(verifyAttentionOperands(
          *this, getQuery(), getKey(), getValue(), getKeyMask(), getCausal(),
          getKeyTile(), getQueryTile(), getOut(), getLse(), out, lse)))
    return failure();
  if (getDout().getType() != out)
    return emitOpError() << "dout must have the out's type " << out << ", got "
                         << getDout().getType();
  if (Value dlse = getDlse(); dlse && dlse.getType() != lse)
    return emitOpError() << "dlse must have the lse's type " << lse << ", got "
                         << dlse.getType();
  Value operands[] = {getQuery(), getKey(), getValue()};
  const char *names[] = {"dquery", "dkey", "dvalue"};
  for (auto [operand, result, name] : llvm::zip(operands, getResults(), names))
    if (result.getType() != operand.getType())
      return emitOpError() << name << " must have its operand's type "
                           << operand.getType() << ", got " << result.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// GlobalNormOp, ClipByGlobalNormOp
//===----------------------------------------------------------------------===//

/// Shared by global_norm and clip_by_global_norm.
static LogicalResult verifyNormInputs(Operation *op, TypeRange inputs,
                                      Type norm) {
  if (inputs.empty())
    return op->emitOpError() << "needs at least one input";
  for (auto [i, type] : llvm::enumerate(inputs))
    if (!isFloatTensor(type))
      return op->emitOpError()
             << "input #" << i << " must be a float tensor, got " << type;
  if (!isFloatScalarTensor(norm))
    return op->emitOpError()
           << "the norm must be a 0-d float tensor, got " << norm;
  return success();
}

LogicalResult GlobalNormOp::verify() {
  return verifyNormInputs(*this, getInputs().getTypes(), getNorm().getType());
}

LogicalResult ClipByGlobalNormOp::verify() {
  if (failed(
          verifyNormInputs(*this, getInputs().getTypes(), getNorm().getType())))
    return failure();
  if (!(getMaxNorm().convertToDouble() > 0.0))
    return emitOpError() << "max_norm must be positive, got "
                         << getMaxNorm().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// SgdOp, AdamWOp
//===----------------------------------------------------------------------===//

/// Shared by the optimizer updates: a float parameter and a 0-d float lr.
static LogicalResult verifyUpdate(Operation *op, Type param, Type lr,
                                  double weightDecay) {
  if (!isFloatTensor(param))
    return op->emitOpError()
           << "the parameter must be a float tensor, got " << param;
  if (!isFloatScalarTensor(lr))
    return op->emitOpError()
           << "the learning rate must be a 0-d float tensor, got " << lr;
  if (!(weightDecay >= 0.0))
    return op->emitOpError()
           << "weight_decay must be non-negative, got " << weightDecay;
  return success();
}

LogicalResult SgdOp::verify() {
  return verifyUpdate(*this, getParam().getType(), getLr().getType(),
                      getWeightDecay().convertToDouble());
}

LogicalResult AdamWOp::verify() {
  if (failed(verifyUpdate(*this, getParam().getType(), getLr().getType(),
                          getWeightDecay().convertToDouble())))
    return failure();
  auto param = cast<RankedTensorType>(getParam().getType());
  auto moment = cast<RankedTensorType>(getM().getType());
  if (!isa<FloatType>(moment.getElementType()))
    return emitOpError() << "the moments must be float tensors, got " << moment;
  if (moment.getShape() != param.getShape())
    return emitOpError() << "the moments " << moment
                         << " must have the parameter's shape " << param;
  if (!isIntOrFloatScalarTensor(getStep().getType()))
    return emitOpError()
           << "the step must be a 0-d integer or float tensor, got "
           << getStep().getType();
  for (auto [name, value] :
       {std::pair<StringRef, double>{"beta1", getBeta1().convertToDouble()},
        std::pair<StringRef, double>{"beta2", getBeta2().convertToDouble()}})
    if (!(value >= 0.0 && value < 1.0))
      return emitOpError() << name << " must lie in [0, 1), got " << value;
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError() << "eps must be positive, got "
                         << getEps().convertToDouble();
  return success();
}

#define GET_OP_CLASSES
//===----------------------------------------------------------------------===//
// CheckLabelsOp
//===----------------------------------------------------------------------===//

LogicalResult CheckLabelsOp::verify() {
  auto type = cast<RankedTensorType>(getLabels().getType());
  int64_t numClasses = getNumClasses();
  if (numClasses <= 0)
    return emitOpError() << "num_classes must be positive, got " << numClasses;
  int64_t ignore = getIgnoreIndex();
  if (ignore >= 0 && ignore < numClasses)
    return emitOpError() << "ignore_index = " << ignore
                         << " is a valid class index in [0, " << numClasses
                         << ")";
  if (std::optional<int64_t> argument = getArgument();
      argument && *argument < 0)
    return emitOpError() << "argument must be >= 0 when present, got "
                         << *argument;
  bool hasOffsets = getOffsets().has_value(), hasSizes = getSizes().has_value(),
       hasStrides = getStrides().has_value();
  if (!hasOffsets && !hasSizes && !hasStrides)
    return success();
  if (!hasOffsets || !hasSizes || !hasStrides)
    return emitOpError() << "offsets, sizes and strides go together";
  ArrayRef<int64_t> offsets = *getOffsets(), sizes = *getSizes(),
                    strides = *getStrides();
  int64_t rank = type.getRank();
  if ((int64_t)offsets.size() != rank || (int64_t)sizes.size() != rank ||
      (int64_t)strides.size() != rank)
    return emitOpError() << "offsets, sizes and strides need " << rank
                         << " entries each (the rank of the labels)";
  for (int64_t d = 0; d < rank; ++d) {
    if (offsets[d] < 0 || sizes[d] <= 0 || strides[d] <= 0)
      return emitOpError() << "dimension " << d << ": offset " << offsets[d]
                           << ", size " << sizes[d] << ", stride " << strides[d]
                           << " (offsets >= 0, sizes and strides > 0)";
    if (!type.isDynamicDim(d) &&
        offsets[d] + (sizes[d] - 1) * strides[d] >= type.getDimSize(d))
      return emitOpError() << "dimension " << d << ": the box ends at "
                           << offsets[d] + (sizes[d] - 1) * strides[d]
                           << ", past the labels' size " << type.getDimSize(d);
  }
  return success();
}

#include "train/TrainOps.cpp.inc"
