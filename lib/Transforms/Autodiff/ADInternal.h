//===- ADInternal.h - Shared pieces of train-differentiate ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Not installed: the state of one reverse sweep and the rule entry points
// that the differentiation driver, the linalg rules and the scalar rules
// share.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_TRANSFORMS_AUTODIFF_ADINTERNAL_H
#define GA_LIB_TRANSFORMS_AUTODIFF_ADINTERNAL_H

#include "ga/Interfaces/DifferentiableOpInterface.h"
#include "ga/Utils/TensorBuilders.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>

namespace ga::ad {

/// The elementwise sum of two tensors of the same type (linalg.add).
mlir::Value addTensors(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                       mlir::Value rhs);
/// `acc + v` elementwise (integer or float), computed into `acc` (its
/// init): what an accumulator's update must be to bufferize in place.
mlir::Value addInto(mlir::OpBuilder &b, mlir::Location loc, mlir::Value acc,
                    mlir::Value v);

/// When `contribution` is a reduction from zeros (a product over the
/// micro-batch's rows) seen through reshapes and permuting copies: the
/// reduction's init and the layout operations, from the reduction out. An
/// accumulator in the reduction's layout (its init) then continues the sum
/// in place, in the full batch's order of terms, and the layouts run once
/// on the accumulated value (they move values without rounding them).
bool matchReductionThroughLayouts(
    mlir::Value contribution, mlir::OpOperand *&init,
    llvm::SmallVectorImpl<mlir::Operation *> &layouts);

/// Adjoint rule of a linalg.generic whose results have adjoints in `sweep`.
mlir::LogicalResult adjointGeneric(mlir::linalg::GenericOp op, Sweep &sweep);
/// Whether `operand` of `op` is the input of a convolution `y += x * w`,
/// read through windows `stride * o + dilation * k` (ConvRules.cpp).
bool isConvolutionInput(mlir::linalg::GenericOp op, mlir::OpOperand *operand);
/// Adds the adjoint of a convolution's input (the transposed convolution of
/// the result's adjoint `dy` with the weight) to `sweep`.
mlir::LogicalResult adjointConvolutionInput(mlir::linalg::GenericOp op,
                                            mlir::OpOperand *operand,
                                            mlir::Value dy, Sweep &sweep);
/// Adjoint rules of the tensor and train operations.
mlir::LogicalResult adjointTensorOp(mlir::Operation *op, Sweep &sweep);
/// True if adjointTensorOp has a rule for `op`.
bool hasTensorRule(mlir::Operation *op);
/// Adjoint rule of a train.checkpoint: recomputes its body and sweeps it.
mlir::LogicalResult adjointCheckpoint(mlir::Operation *checkpoint,
                                      Sweep &sweep);

/// Reverse mode over the scalar body of a linalg.generic. The body is
/// recomputed at the builder's position (with `map` giving the new values of
/// the block arguments, and of anything else the caller maps first), seeded
/// with cotangents, and swept backwards.
class ScalarReverse {
public:
  ScalarReverse(mlir::OpBuilder &b, mlir::IRMapping &map) : b(b), map(map) {}

  /// Clones the body's operations except the terminator and `skip`.
  void recompute(mlir::Block &body,
                 llvm::ArrayRef<mlir::Operation *> skip = {});
  /// cotangent(orig) += cot.
  void seed(mlir::Value orig, mlir::Value cot);
  /// Sweeps the body backwards (skipping `skip`); fails with an error on an
  /// operation without a scalar rule that lies on a differentiated path.
  mlir::LogicalResult run(mlir::Block &body,
                          llvm::ArrayRef<mlir::Operation *> skip = {});
  /// The cotangent accumulated for the original body value `orig`, or null.
  mlir::Value cotangent(mlir::Value orig) const { return cot.lookup(orig); }

private:
  mlir::OpBuilder &b;
  mlir::IRMapping &map;
  llvm::DenseMap<mlir::Value, mlir::Value> cot;
};

/// For each block argument of a generic body: the scalar derivative reads
/// it (directly or to recompute a value it reads). `extraRoots` are body
/// values that the caller's own rule reads. Used by getAdjointNeeds.
llvm::SmallVector<bool>
scalarArgsNeeded(mlir::Block &body, llvm::ArrayRef<mlir::Operation *> skip,
                 llvm::ArrayRef<mlir::Value> extraRoots = {});

/// The adjoint needs of a linalg structured op (see ga::AdjointNeeds), from
/// its scalar body: the same for a named op and its generic form.
void genericAdjointNeeds(mlir::linalg::LinalgOp op, bool &differentiable,
                         llvm::SmallVectorImpl<bool> &operands,
                         llvm::SmallVectorImpl<bool> &results);

/// Turns contraction-shaped generics into named matmuls (with transposed
/// operands where needed) so that they can reach GEMM libraries; other
/// contractions stay generic.
void specializeContractions(mlir::MLIRContext *ctx,
                            llvm::ArrayRef<mlir::linalg::GenericOp> generics);

/// Differentiates the loss yielded by `body` with respect to `params` (block
/// arguments of `body`); the backward code goes before the terminator.
/// `toSpecialize` gets the contraction-shaped generics, which the caller
/// specializes once the gradients are in place (specializing replaces ops).
///
/// With `newAccumulator` (a micro-batch body), the parameters' adjoints
/// start from accumulators instead (see Sweep::newAccumulator): the result
/// is then empty and `accumulated` gets each parameter's accumulations.
mlir::FailureOr<llvm::SmallVector<mlir::Value>> differentiateBody(
    mlir::Operation *owner, mlir::Block &body, mlir::ValueRange params,
    mlir::Value loss,
    llvm::SmallVectorImpl<mlir::linalg::GenericOp> &toSpecialize,
    std::function<mlir::Value(mlir::Type)> newAccumulator = nullptr,
    llvm::SmallVectorImpl<llvm::SmallVector<Sweep::Accumulation>> *accumulated =
        nullptr);

} // namespace ga::ad

#endif // GA_LIB_TRANSFORMS_AUTODIFF_ADINTERNAL_H
