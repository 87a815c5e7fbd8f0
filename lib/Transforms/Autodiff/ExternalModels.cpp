//===- ExternalModels.cpp - DifferentiableOpInterface models --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The adjoint rules of the operations train-differentiate knows, attached as
// external models of DifferentiableOpInterface. Each model is the one place
// where an operation's adjoint and what that adjoint reads are defined: the
// rules themselves live in GenericRules.cpp (linalg), TensorRules.cpp (tensor
// ops and the cross-entropy) and Differentiate.cpp (checkpoints).
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"
#include "ga/Transforms/Autodiff.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "train/TrainOps.h"

#include <type_traits>

using namespace mlir;
using namespace ga;

namespace {

/// The needs of a linalg structured op, from its scalar body.
AdjointNeeds linalgNeeds(Operation *op) {
  AdjointNeeds needs;
  ad::genericAdjointNeeds(cast<linalg::LinalgOp>(op), needs.differentiable,
                          needs.operands, needs.results);
  return needs;
}

/// linalg.generic: the scalar body swept backwards.
struct GenericModel
    : DifferentiableOpInterface::ExternalModel<GenericModel,
                                               linalg::GenericOp> {
  LogicalResult buildAdjoint(Operation *op, ad::Sweep &sweep) const {
    return ad::adjointGeneric(cast<linalg::GenericOp>(op), sweep);
  }
  AdjointNeeds getAdjointNeeds(Operation *op) const { return linalgNeeds(op); }
};

/// A named linalg structured op: answered through LinalgOp, from its own
/// scalar body. The sweep generalizes named ops before it runs, so it never
/// asks one for its adjoint.
template <typename OpTy>
struct NamedLinalgModel
    : DifferentiableOpInterface::ExternalModel<NamedLinalgModel<OpTy>, OpTy> {
  LogicalResult buildAdjoint(Operation *op, ad::Sweep &sweep) const {
    return op->emitOpError()
           << "is a named linalg op: train-differentiate builds the adjoint "
              "of its linalg.generic form (it generalizes named ops first)";
  }
  AdjointNeeds getAdjointNeeds(Operation *op) const { return linalgNeeds(op); }
};

template <typename OpTy> void attachNamedLinalgModel(MLIRContext *ctx) {
  // linalg.generic has its own model.
  if constexpr (!std::is_same_v<OpTy, linalg::GenericOp>)
    OpTy::template attachInterface<NamedLinalgModel<OpTy>>(*ctx);
}

template <typename... Ops> struct NamedLinalgModels {
  static void attach(MLIRContext *ctx) {
    (attachNamedLinalgModel<Ops>(ctx), ...);
  }
};

/// tensor slicing and reshaping ops, train.cross_entropy and
/// train.attention.
template <typename OpTy>
struct TensorModel
    : DifferentiableOpInterface::ExternalModel<TensorModel<OpTy>, OpTy> {
  LogicalResult buildAdjoint(Operation *op, ad::Sweep &sweep) const {
    return ad::adjointTensorOp(op, sweep);
  }
  AdjointNeeds getAdjointNeeds(Operation *op) const {
    AdjointNeeds needs;
    needs.differentiable = true;
    needs.operands.assign(op->getNumOperands(), false);
    needs.results.assign(op->getNumResults(), false);
    // The cross-entropy's gradient recomputes the softmax from the logits
    // and reads the labels.
    if (auto ce = dyn_cast<train::CrossEntropyOp>(op)) {
      needs.operands[ce.getLogitsMutable().getOperandNumber()] = true;
      needs.operands[ce.getLabelsMutable().getOperandNumber()] = true;
    }
    // The attention's gradient recomputes the probabilities tile by tile
    // from the operands and the log-sum-exp, and reads the output.
    if (isa<train::AttentionOp>(op)) {
      needs.operands.assign(op->getNumOperands(), true);
      needs.results.assign(op->getNumResults(), true);
    }
    return needs;
  }
};

/// train.checkpoint: its body is recomputed from all its inputs.
struct CheckpointModel
    : DifferentiableOpInterface::ExternalModel<CheckpointModel,
                                               train::CheckpointOp> {
  LogicalResult buildAdjoint(Operation *op, ad::Sweep &sweep) const {
    return ad::adjointCheckpoint(op, sweep);
  }
  AdjointNeeds getAdjointNeeds(Operation *op) const {
    AdjointNeeds needs;
    needs.differentiable = true;
    needs.operands.assign(op->getNumOperands(), true);
    needs.results.assign(op->getNumResults(), false);
    return needs;
  }
};

/// train.stop_gradient: a constant of the differentiation. Its result is
/// never active (Sweep::propagateActivity), so no adjoint reaches it; its
/// adjoint, were it asked for, adds nothing to its operand's.
struct StopGradientModel
    : DifferentiableOpInterface::ExternalModel<StopGradientModel,
                                               train::StopGradientOp> {
  LogicalResult buildAdjoint(Operation *, ad::Sweep &) const {
    return success();
  }
  AdjointNeeds getAdjointNeeds(Operation *op) const {
    AdjointNeeds needs;
    needs.differentiable = true;
    needs.operands.assign(op->getNumOperands(), false);
    needs.results.assign(op->getNumResults(), false);
    return needs;
  }
};

} // namespace

void ga::registerDifferentiableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    linalg::GenericOp::attachInterface<GenericModel>(*ctx);
    NamedLinalgModels<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
        >::attach(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<
        TensorModel<tensor::ExtractSliceOp>>(*ctx);
    tensor::InsertSliceOp::attachInterface<TensorModel<tensor::InsertSliceOp>>(
        *ctx);
    tensor::ExpandShapeOp::attachInterface<TensorModel<tensor::ExpandShapeOp>>(
        *ctx);
    tensor::ConcatOp::attachInterface<TensorModel<tensor::ConcatOp>>(*ctx);
    tensor::PadOp::attachInterface<TensorModel<tensor::PadOp>>(*ctx);
    tensor::CollapseShapeOp::attachInterface<
        TensorModel<tensor::CollapseShapeOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, train::TrainDialect *) {
    train::CrossEntropyOp::attachInterface<TensorModel<train::CrossEntropyOp>>(
        *ctx);
    train::AttentionOp::attachInterface<TensorModel<train::AttentionOp>>(*ctx);
    train::CheckpointOp::attachInterface<CheckpointModel>(*ctx);
    train::StopGradientOp::attachInterface<StopGradientModel>(*ctx);
  });
}
