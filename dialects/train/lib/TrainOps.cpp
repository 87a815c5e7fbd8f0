//===- TrainOps.cpp - Operations of the train dialect ---------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Verifiers enforce everything that the semantics of the dialect rely on; every
// error message here is covered by test/Dialect/Train/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "train/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace ga::train;

#include "train/TrainEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers shared by the verifiers
//===----------------------------------------------------------------------===//

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

static bool isScalarTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0;
}

static bool isFloatScalarTensor(Type type) {
  return isScalarTensor(type) && isFloatTensor(type);
}

static bool isIntOrFloatScalarTensor(Type type) {
  return isScalarTensor(type) &&
         cast<RankedTensorType>(type).getElementType().isIntOrFloat();
}

/// Checks that a split factor (microbatches, data_parallel) is at least 1.
static LogicalResult verifySplitFactor(Operation *op, StringRef name,
                                       int64_t value) {
  if (value < 1)
    return op->emitOpError() << "'" << name << "' must be >= 1, got " << value;
  return success();
}

/// Checks that every parameter is a float tensor.
static LogicalResult verifyParams(Operation *op, TypeRange params) {
  for (auto [i, type] : llvm::enumerate(params))
    if (!isFloatTensor(type))
      return op->emitOpError()
             << "parameter #" << i
             << " must be a float tensor (only float values have gradients), "
                "got "
             << type;
  return success();
}

/// Checks the batch operands: rank >= 1, a static dimension 0 shared by all of
/// them, divisible by `splits`. Sets `batchSize` to that dimension (or leaves
/// it unset when there is no batch operand).
static LogicalResult verifyBatchOperands(Operation *op, TypeRange batch,
                                         int64_t splits, StringRef splitsText,
                                         std::optional<int64_t> &batchSize) {
  for (auto [i, type] : llvm::enumerate(batch)) {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.getRank() < 1)
      return op->emitOpError()
             << "batch operand #" << i
             << " must have rank >= 1 (dimension 0 is the batch dimension), "
                "got "
             << type;
    int64_t dim = tensor.getDimSize(0);
    if (ShapedType::isDynamic(dim))
      return op->emitOpError()
             << "batch operand #" << i << " has a dynamic batch dimension ("
             << type << "); the batch dimension must be static";
    if (!batchSize) {
      batchSize = dim;
      continue;
    }
    if (dim != *batchSize)
      return op->emitOpError()
             << "batch operand #" << i << " has batch dimension " << dim
             << ", but batch operand #0 has " << *batchSize
             << " (all batch operands share dimension 0)";
  }
  if (batchSize && *batchSize % splits != 0)
    return op->emitOpError()
           << "global batch size " << *batchSize << " is not divisible by "
           << splitsText << " = " << splits;
  return success();
}

/// Checks the loss result and one gradient per parameter, with its type.
static LogicalResult verifyLossAndGrads(Operation *op, Type loss,
                                        TypeRange params, TypeRange grads) {
  if (!isFloatScalarTensor(loss))
    return op->emitOpError() << "loss must be a 0-d float tensor, got " << loss;
  if (grads.size() != params.size())
    return op->emitOpError()
           << "expected one gradient per parameter: " << params.size()
           << " parameter(s) but " << grads.size() << " gradient(s)";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(params, grads))) {
    auto [param, grad] = pair;
    if (param != grad)
      return op->emitOpError()
             << "gradient #" << i << " has type " << grad << ", but parameter #"
             << i << " has type " << param;
  }
  return success();
}

/// Checks that the entry block's arguments have the `expected` types; `kinds`
/// names what each argument stands for in messages.
static LogicalResult
verifyBlockArgs(Operation *op, Block &block, ArrayRef<Type> expected,
                llvm::function_ref<std::string(unsigned)> describe,
                StringRef region = "body") {
  if (block.getNumArguments() != expected.size())
    return op->emitOpError() << region << " must have " << expected.size()
                             << " argument(s), got " << block.getNumArguments();
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    if (arg.getType() != expected[i])
      return op->emitOpError()
             << region << " argument #" << i << " (" << describe(i)
             << ") has type " << arg.getType() << ", expected " << expected[i];
  return success();
}

/// Returns the `train.yield` that ends `block`, or emits an error.
static FailureOr<YieldOp> getTerminatingYield(Operation *op, Block &block,
                                              StringRef region = "body") {
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
  if (!yield)
    return op->emitOpError() << region << " must end with 'train.yield'";
  return yield;
}

/// Checks that a yield gives values of the `expected` types.
static LogicalResult verifyYieldTypes(Operation *op, YieldOp yield,
                                      TypeRange expected, StringRef what) {
  if (yield.getValues().size() != expected.size())
    return op->emitOpError()
           << "body yields " << yield.getValues().size()
           << " value(s), expected " << expected.size() << " (" << what << ")";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(yield.getValues().getTypes(), expected))) {
    auto [actual, want] = pair;
    if (actual != want)
      return op->emitOpError() << "body yields " << actual << " at position "
                               << i << ", expected " << want;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// StepOp
//===----------------------------------------------------------------------===//

Block::BlockArgListType StepOp::getParamArgs() {
  return getBody().front().getArguments().take_front(getParams().size());
}

Block::BlockArgListType StepOp::getBatchArgs() {
  return getBody().front().getArguments().slice(getParams().size(),
                                                getBatch().size());
}

std::optional<int64_t> StepOp::getBatchSize() {
  if (getBatch().empty())
    return std::nullopt;
  return cast<RankedTensorType>(getBatch().front().getType()).getDimSize(0);
}

YieldOp StepOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult StepOp::verify() {
  if (failed(verifySplitFactor(*this, "microbatches", getMicrobatches())) ||
      failed(verifySplitFactor(*this, "data_parallel", getDataParallel())))
    return failure();
  if (failed(verifyParams(*this, getParams().getTypes())))
    return failure();
  std::optional<int64_t> batchSize;
  int64_t splits;
  if (llvm::MulOverflow<int64_t>(getMicrobatches(), getDataParallel(), splits))
    return emitOpError() << "microbatches * data_parallel overflows";
  if (failed(verifyBatchOperands(*this, getBatch().getTypes(), splits,
                                 "microbatches * data_parallel", batchSize)))
    return failure();
  return verifyLossAndGrads(*this, getLoss().getType(), getParams().getTypes(),
                            getGrads().getTypes());
}

LogicalResult StepOp::verifyRegions() {
  Block &block = getBody().front();
  SmallVector<Type> expected(getParams().getTypes());
  llvm::append_range(expected, getBatch().getTypes());
  unsigned numParams = getParams().size();
  if (failed(verifyBlockArgs(*this, block, expected, [&](unsigned i) {
        return i < numParams
                   ? "parameter #" + std::to_string(i)
                   : "batch operand #" + std::to_string(i - numParams);
      })))
    return failure();
  FailureOr<YieldOp> yield = getTerminatingYield(*this, block);
  if (failed(yield))
    return failure();
  SmallVector<Type> yielded{getLoss().getType()};
  llvm::append_range(yielded, getAux().getTypes());
  return verifyYieldTypes(*this, *yield, yielded,
                          "the loss, then each auxiliary result");
}

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
// CheckpointOp
//===----------------------------------------------------------------------===//

YieldOp CheckpointOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult CheckpointOp::verifyRegions() {
  Block &block = getBody().front();
  SmallVector<Type> expected(getInputs().getTypes());
  if (failed(verifyBlockArgs(*this, block, expected, [](unsigned i) {
        return "input #" + std::to_string(i);
      })))
    return failure();
  FailureOr<YieldOp> yield = getTerminatingYield(*this, block);
  if (failed(yield))
    return failure();
  return verifyYieldTypes(*this, *yield, getResultTypes(), "one per result");
}

//===----------------------------------------------------------------------===//
// AccumulateOp
//===----------------------------------------------------------------------===//

Block::BlockArgListType AccumulateOp::getParamArgs() {
  return getBody().front().getArguments().take_front(getParams().size());
}

Block::BlockArgListType AccumulateOp::getBatchArgs() {
  return getBody().front().getArguments().slice(getParams().size(),
                                                getBatch().size());
}

Block::BlockArgListType AccumulateOp::getGlobalArgs() {
  return getBody().front().getArguments().slice(
      getParams().size() + getBatch().size(), getGlobals().size());
}

Block::BlockArgListType AccumulateOp::getAccumulatorArgs() {
  return getBody().front().getArguments().drop_front(
      getParams().size() + getBatch().size() + getGlobals().size());
}

YieldOp AccumulateOp::getFinalizeYield() {
  return cast<YieldOp>(getFinalize().front().getTerminator());
}

YieldOp AccumulateOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult AccumulateOp::verify() {
  if (failed(verifySplitFactor(*this, "microbatches", getMicrobatches())))
    return failure();
  if (failed(verifyParams(*this, getParams().getTypes())))
    return failure();
  std::optional<int64_t> batchSize;
  if (failed(verifyBatchOperands(*this, getBatch().getTypes(),
                                 getMicrobatches(), "microbatches", batchSize)))
    return failure();
  if (failed(verifyLossAndGrads(*this, getLoss().getType(),
                                getParams().getTypes(), getGrads().getTypes())))
    return failure();
  for (auto [i, type] : llvm::enumerate(getMetrics().getTypes()))
    if (!cast<RankedTensorType>(type).getElementType().isIntOrFloat())
      return emitOpError() << "metric #" << i
                           << " needs an integer or float element type (it "
                              "is accumulated by addition), got "
                           << type;
  if (!getAccumulators().empty() && !isExplicit())
    return emitOpError() << "has " << getAccumulators().size()
                         << " accumulator(s) but no finalize region (the "
                            "explicit form needs both)";
  for (auto [i, type] : llvm::enumerate(getAccumulators().getTypes()))
    if (!cast<RankedTensorType>(type).getElementType().isIntOrFloat())
      return emitOpError() << "accumulator #" << i
                           << " needs an integer or float element type (it "
                              "is accumulated by addition), got "
                           << type;
  return success();
}

/// The explicit form: the body yields the next accumulators, the finalize
/// region maps the final ones (then the parameters and the globals) to the
/// results.
static LogicalResult verifyExplicitAccumulate(AccumulateOp op) {
  FailureOr<YieldOp> yield = getTerminatingYield(op, op.getBody().front());
  if (failed(yield))
    return failure();
  SmallVector<Type> accumulators(op.getAccumulators().getTypes());
  if (failed(verifyYieldTypes(op, *yield, accumulators,
                              "the next value of each accumulator")))
    return failure();
  Block &finalize = op.getFinalize().front();
  SmallVector<Type> expected(accumulators);
  llvm::append_range(expected, op.getParams().getTypes());
  llvm::append_range(expected, op.getGlobals().getTypes());
  unsigned numAccumulators = accumulators.size();
  unsigned numParams = op.getParams().size();
  if (failed(verifyBlockArgs(
          op, finalize, expected,
          [&](unsigned i) {
            if (i < numAccumulators)
              return "accumulator #" + std::to_string(i);
            if (i < numAccumulators + numParams)
              return "parameter #" + std::to_string(i - numAccumulators);
            return "global #" + std::to_string(i - numAccumulators - numParams);
          },
          "finalize region")))
    return failure();
  FailureOr<YieldOp> finalYield =
      getTerminatingYield(op, finalize, "finalize region");
  if (failed(finalYield))
    return failure();
  TypeRange results = op->getResultTypes();
  TypeRange finals = finalYield->getValues().getTypes();
  if (!llvm::equal(finals, results))
    return finalYield->emitOpError()
           << "yields " << finals
           << " from the finalize region, expected the op's result types "
           << results << " (the loss, the gradients, then the metrics)";
  return success();
}

LogicalResult AccumulateOp::verifyRegions() {
  Block &block = getBody().front();
  int64_t k = getMicrobatches();
  SmallVector<Type> expected(getParams().getTypes());
  for (Type type : getBatch().getTypes()) {
    auto tensor = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(tensor.getShape());
    shape[0] /= k;
    expected.push_back(tensor.clone(shape));
  }
  llvm::append_range(expected, getGlobals().getTypes());
  llvm::append_range(expected, getAccumulators().getTypes());
  unsigned numParams = getParams().size();
  unsigned numBatch = getBatch().size();
  unsigned numGlobals = getGlobals().size();
  if (failed(verifyBlockArgs(*this, block, expected, [&](unsigned i) {
        if (i < numParams)
          return "parameter #" + std::to_string(i);
        if (i < numParams + numBatch)
          return "micro-batch slice of batch operand #" +
                 std::to_string(i - numParams);
        if (i < numParams + numBatch + numGlobals)
          return "global #" + std::to_string(i - numParams - numBatch);
        return "accumulator #" +
               std::to_string(i - numParams - numBatch - numGlobals);
      })))
    return failure();
  if (isExplicit())
    return verifyExplicitAccumulate(*this);
  FailureOr<YieldOp> yield = getTerminatingYield(*this, block);
  if (failed(yield))
    return failure();
  size_t numYielded = yield->getValues().size();
  size_t numMetrics = getMetrics().size();
  if (numYielded != 1 + numMetrics &&
      numYielded != 1 + getParams().size() + numMetrics)
    return numMetrics == 0
               ? emitOpError()
                     << "body yields " << numYielded
                     << " value(s), expected 1 (the loss contribution) or "
                     << 1 + getParams().size()
                     << " (the loss contribution and one gradient "
                        "contribution per parameter)"
               : emitOpError()
                     << "body yields " << numYielded << " value(s), expected "
                     << 1 + numMetrics << " (the loss contribution and "
                     << numMetrics << " metric contribution(s)) or "
                     << 1 + getParams().size() + numMetrics
                     << " (the loss contribution, one gradient contribution "
                        "per parameter, then the metric contributions)";
  SmallVector<Type> yielded{getLoss().getType()};
  if (numYielded > 1 + numMetrics)
    llvm::append_range(yielded, getParams().getTypes());
  llvm::append_range(yielded, getMetrics().getTypes());
  return verifyYieldTypes(*this, *yield, yielded,
                          "the loss, then the gradient contributions, then "
                          "the metric contributions");
}

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  Type elementType = getInput().getType().getElementType();
  if (!elementType.isIntOrFloat())
    return emitOpError() << "needs an integer or float element type, got "
                         << getInput().getType();
  if (getKind() == ReduceKind::Avg && !isa<FloatType>(elementType))
    return emitOpError() << "'avg' needs a float element type, got "
                         << getInput().getType();
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
