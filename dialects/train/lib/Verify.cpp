//===- Verify.cpp - What the train dialect's verifiers share --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "Verify.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace ga::train;

namespace ga::train::verify {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

bool isScalarTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0;
}

bool isFloatScalarTensor(Type type) {
  return isScalarTensor(type) && isFloatTensor(type);
}

bool isIntOrFloatScalarTensor(Type type) {
  return isScalarTensor(type) &&
         cast<RankedTensorType>(type).getElementType().isIntOrFloat();
}

/// Checks that a split factor (microbatches, data_parallel) is at least 1.
LogicalResult verifySplitFactor(Operation *op, StringRef name, int64_t value) {
  if (value < 1)
    return op->emitOpError() << "'" << name << "' must be >= 1, got " << value;
  return success();
}

/// Checks that every parameter is a float tensor.
LogicalResult verifyParams(Operation *op, TypeRange params) {
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
LogicalResult verifyBatchOperands(Operation *op, TypeRange batch,
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
LogicalResult verifyLossAndGrads(Operation *op, Type loss, TypeRange params,
                                 TypeRange grads) {
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
LogicalResult
verifyBlockArgs(Operation *op, Block &block, ArrayRef<Type> expected,
                llvm::function_ref<std::string(unsigned)> describe,
                StringRef region) {
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
FailureOr<YieldOp> getTerminatingYield(Operation *op, Block &block,
                                       StringRef region) {
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
  if (!yield)
    return op->emitOpError() << region << " must end with 'train.yield'";
  return yield;
}

/// Checks that a yield gives values of the `expected` types.
LogicalResult verifyYieldTypes(Operation *op, YieldOp yield, TypeRange expected,
                               StringRef what) {
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

} // namespace ga::train::verify
