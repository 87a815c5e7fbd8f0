//===- TrainOps.cpp - Operations of the train dialect ---------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Verifiers enforce everything that the semantics of the dialect rely on; every
// error message here is covered by test/Dialect/Train/invalid.mlir. Here the
// step, its checkpoints, its accumulation and its reductions across ranks;
// the operations that compute in ComputeOps.cpp, the checks both share in
// Verify.cpp.
//
//===----------------------------------------------------------------------===//

#include "Verify.h"

#include "train/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "train/TrainDialect.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace ga::train;
using namespace ga::train::verify;

#include "train/TrainEnums.cpp.inc"

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
  if (getShard() < 0 || getShard() > 3)
    return emitOpError() << "'shard' must be a stage from 0 to 3, got "
                         << getShard();
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

/// The ranks of the data-parallel function around `op`
/// (train.data_parallel), if it records them.
static std::optional<int64_t> enclosingRanks(Operation *op) {
  auto fn = op->getParentOfType<FunctionOpInterface>();
  if (!fn)
    return std::nullopt;
  if (auto ranks = fn->getAttrOfType<IntegerAttr>(
          TrainDialect::DataParallelAttrHelper::getNameStr()))
    return ranks.getInt();
  return std::nullopt;
}

/// Checks a collective that maps `part` elements on each rank to `whole`
/// across the ranks: one integer or float element type, static sizes,
/// `whole` a multiple of `part`, and r times it in a function of r ranks.
static LogicalResult verifyPartition(Operation *op, RankedTensorType whole,
                                     RankedTensorType part, StringRef wholeName,
                                     StringRef partName) {
  Type elementType = whole.getElementType();
  if (!elementType.isIntOrFloat() || part.getElementType() != elementType)
    return op->emitOpError()
           << "needs integer or float vectors of one element type, got "
           << whole << " and " << part;
  if (whole.isDynamicDim(0) || part.isDynamicDim(0))
    return op->emitOpError()
           << "needs static sizes, got " << whole << " and " << part;
  int64_t c = part.getDimSize(0), n = whole.getDimSize(0);
  if (c < 1 || n % c != 0)
    return op->emitOpError() << "the " << wholeName << " (" << n
                             << " elements) must be a multiple of the "
                             << partName << " (" << c << " elements)";
  if (std::optional<int64_t> ranks = enclosingRanks(op);
      ranks && n != *ranks * c)
    return op->emitOpError()
           << "the " << wholeName
           << " must have train.data_parallel = " << *ranks << " times the "
           << partName << "'s " << c << " elements, got " << n;
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (getKind() == ReduceKind::Avg && !isa<FloatType>(input.getElementType()))
    return emitOpError() << "'avg' needs a float element type, got " << input;
  return verifyPartition(*this, input,
                         cast<RankedTensorType>(getResult().getType()), "input",
                         "result");
}

LogicalResult AllGatherOp::verify() {
  return verifyPartition(*this, cast<RankedTensorType>(getResult().getType()),
                         cast<RankedTensorType>(getInput().getType()), "result",
                         "input");
}
