//===- Autodiff.h - Reverse-mode differentiation of training steps -*- C++
//-*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The reverse-mode automatic differentiation behind `train-differentiate`,
// exposed for other passes:
//
// * `getAdjointNeeds` says which operands and results of an operation its
//   adjoint reads. It is the memory model of rematerialization planning: a
//   forward value must be kept alive until the backward pass exactly when
//   some adjoint needs it (or it is an input of a `train.checkpoint`).
// * `differentiateStep` / `differentiateAccumulate` rewrite one operation.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRANSFORMS_AUTODIFF_H
#define GA_TRANSFORMS_AUTODIFF_H

#include "ga/Interfaces/DifferentiableOpInterface.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "train/TrainDialect.h"
#include "llvm/ADT/SmallVector.h"

#include "ga/Analysis/Decomposability.h"

namespace ga {
namespace train {
class StepOp;
class AccumulateOp;
} // namespace train

/// The forward values that the adjoint of `op` needs (see AdjointNeeds),
/// from its DifferentiableOpInterface. For a linalg op this follows the
/// derivative of its scalar body: a bias addition needs nothing, a product
/// needs both factors, a max-reduction its result. An op without the
/// interface is differentiable (and needs nothing) when it has no float
/// tensor operand.
AdjointNeeds getAdjointNeeds(mlir::Operation *op);

/// Attaches DifferentiableOpInterface to linalg.generic, the named linalg
/// structured ops, the tensor slicing and reshaping ops, train.cross_entropy
/// and train.checkpoint.
void registerDifferentiableOpInterfaceExternalModels(
    mlir::DialectRegistry &registry);

/// Replaces `step` (which must have microbatches = data_parallel = 1) by its
/// forward computation followed by the reverse-mode gradient computation of
/// the loss with respect to every parameter, in the enclosing block. Emits an
/// error on the first operation that cannot be differentiated. With
/// `markPerExample`, the reductions of the differentiated body whose results
/// are per-example get the unit attribute `train.per_example`.
mlir::LogicalResult differentiateStep(train::StepOp step,
                                      bool markPerExample = false);

/// Marks with `train.per_example` the `linalg` operations of `body` (a
/// differentiated step's or micro-batch's, owned by `owner`) that have a
/// reduction loop and per-example results, its arguments classified by
/// `arguments` (one each).
void markPerExampleReductions(mlir::Operation *owner, mlir::Block &body,
                              llvm::ArrayRef<BatchClass> arguments);

/// Makes the body of `op` yield the gradient contribution of every parameter
/// after its loss contribution. Bodies that already yield them are left alone.
mlir::LogicalResult differentiateAccumulate(train::AccumulateOp op);

} // namespace ga

#endif // GA_TRANSFORMS_AUTODIFF_H
