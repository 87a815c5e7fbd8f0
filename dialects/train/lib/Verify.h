//===- Verify.h - What the train dialect's verifiers share ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The checks that several of the dialect's verifiers make (Verify.cpp):
// element types, split factors, parameters, batch operands, the loss and
// the gradients, region arguments and yields.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRAIN_LIB_VERIFY_H
#define GA_TRAIN_LIB_VERIFY_H

#include "train/TrainOps.h"

namespace ga::train::verify {

using mlir::ArrayRef;
using mlir::Block;
using mlir::FailureOr;
using mlir::LogicalResult;
using mlir::StringRef;
using mlir::Type;
using mlir::TypeRange;

/// A tensor (or scalar) of floats.
bool isFloatTensor(Type type);
/// A tensor of rank 0.
bool isScalarTensor(Type type);
/// A tensor of rank 0 of floats.
bool isFloatScalarTensor(Type type);
/// A tensor of rank 0 of integers or floats.
bool isIntOrFloatScalarTensor(Type type);

/// Checks that a split factor (microbatches, data_parallel) is at least 1.
LogicalResult verifySplitFactor(mlir::Operation *op, StringRef name,
                                int64_t value);

/// Checks that every parameter is a float tensor.
LogicalResult verifyParams(mlir::Operation *op, TypeRange params);

/// Checks the batch operands: rank >= 1, a static dimension 0 shared by all of
/// them, divisible by `splits`. Sets `batchSize` to that dimension (or leaves
/// it unset when there is no batch operand).
LogicalResult verifyBatchOperands(mlir::Operation *op, TypeRange batch,
                                  int64_t splits, StringRef splitsText,
                                  std::optional<int64_t> &batchSize);

/// Checks the loss result and one gradient per parameter, with its type.
LogicalResult verifyLossAndGrads(mlir::Operation *op, Type loss,
                                 TypeRange params, TypeRange grads);

/// Checks that the entry block's arguments have the `expected` types; `kinds`
/// names what each argument stands for in messages.
LogicalResult
verifyBlockArgs(mlir::Operation *op, Block &block, ArrayRef<Type> expected,
                llvm::function_ref<std::string(unsigned)> describe,
                StringRef region = "body");

/// Returns the `train.yield` that ends `block`, or emits an error.
FailureOr<YieldOp> getTerminatingYield(mlir::Operation *op, Block &block,
                                       StringRef region = "body");

/// Checks that a yield gives values of the `expected` types.
LogicalResult verifyYieldTypes(mlir::Operation *op, YieldOp yield,
                               TypeRange expected, StringRef what);

} // namespace ga::train::verify

#endif // GA_TRAIN_LIB_VERIFY_H
