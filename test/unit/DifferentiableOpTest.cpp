//===- DifferentiableOpTest.cpp - Adding a differentiable op --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Adding a differentiable op is writing one external model of
// DifferentiableOpInterface: tensor.reshape has no adjoint in ga-opt, so
// train-differentiate refuses a step that reshapes parameters with it; with
// the model below (the example of docs/autodiff.md) attached, it
// differentiates it, and the adjoint needs come from the same model.
//
//===----------------------------------------------------------------------===//

#include "ga/InitAll.h"
#include "ga/Interfaces/DifferentiableOpInterface.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Transforms/Passes.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

using namespace mlir;

namespace {

/// The result adjoint of a tensor.reshape (static shapes) reshaped back to
/// its source's shape.
Value reshapedBack(tensor::ReshapeOp reshape, ga::ad::Sweep &sweep) {
  OpBuilder &b = sweep.builder;
  auto type = cast<RankedTensorType>(reshape.getSource().getType());
  auto shapeType = RankedTensorType::get({type.getRank()}, b.getI64Type());
  Value shape = arith::ConstantOp::create(
      b, reshape.getLoc(),
      DenseIntElementsAttr::get(shapeType, type.getShape()));
  return tensor::ReshapeOp::create(
      b, reshape.getLoc(), type, sweep.getAdjoint(reshape.getResult()), shape);
}

/// The adjoint of tensor.reshape: the source gets the result's adjoint in
/// its own shape.
struct ReshapeModel
    : ga::DifferentiableOpInterface::ExternalModel<ReshapeModel,
                                                   tensor::ReshapeOp> {
  LogicalResult buildAdjoint(Operation *op, ga::ad::Sweep &sweep) const {
    auto reshape = cast<tensor::ReshapeOp>(op);
    sweep.addAdjoint(op->getLoc(), reshape.getSource(),
                     reshapedBack(reshape, sweep));
    return success();
  }
  ga::AdjointNeeds getAdjointNeeds(Operation *op) const {
    ga::AdjointNeeds needs;
    needs.differentiable = true;
    needs.operands.assign(op->getNumOperands(), false);
    needs.results.assign(op->getNumResults(), false);
    return needs;
  }
};

/// The same adjoint, written by a rule that folds the source's adjoint so
/// far itself and sets it (setAdjoint) instead of adding to it.
struct SettingReshapeModel
    : ga::DifferentiableOpInterface::ExternalModel<SettingReshapeModel,
                                                   tensor::ReshapeOp> {
  LogicalResult buildAdjoint(Operation *op, ga::ad::Sweep &sweep) const {
    auto reshape = cast<tensor::ReshapeOp>(op);
    auto type = cast<RankedTensorType>(reshape.getSource().getType());
    Value back = reshapedBack(reshape, sweep);
    if (Value old = sweep.getAdjoint(reshape.getSource())) {
      Value empty = tensor::EmptyOp::create(
          sweep.builder, op->getLoc(), type.getShape(), type.getElementType());
      back = linalg::AddOp::create(sweep.builder, op->getLoc(),
                                   ValueRange{old, back}, ValueRange{empty})
                 .getResult(0);
    }
    sweep.setAdjoint(reshape.getSource(), back);
    return success();
  }
  ga::AdjointNeeds getAdjointNeeds(Operation *op) const {
    return ReshapeModel().getAdjointNeeds(op);
  }
};

/// The body of both inputs below: loss = sum(reshape(w) * reshape(w)^T)
/// with two reshapes, two contributions to w's gradient.
constexpr const char *kLossBody = R"mlir(
    %zero = arith.constant 0.0 : f32
    %shape = arith.constant dense<[2, 2]> : tensor<2xi64>
    %p1 = tensor.reshape %pw(%shape) : (tensor<4xf32>, tensor<2xi64>) -> tensor<2x2xf32>
    %p2 = tensor.reshape %pw(%shape) : (tensor<4xf32>, tensor<2xi64>) -> tensor<2x2xf32>
    %ec = tensor.empty() : tensor<2x2xf32>
    %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%p1, %p2 : tensor<2x2xf32>, tensor<2x2xf32>) outs(%ec : tensor<2x2xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<2x2xf32>
    %e = tensor.empty() : tensor<f32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                         iterator_types = ["reduction", "reduction"]}
        ins(%c : tensor<2x2xf32>) outs(%z : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.addf %o, %a : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4xf32>
}
)mlir";

/// A full-batch step.
const std::string kStep = std::string(R"mlir(
func.func @step(%w: tensor<4xf32>, %x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %loss, %gw = train.step params(%w : tensor<4xf32>) batch(%x : tensor<2x4xf32>)
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<2x4xf32>):)mlir") +
                          kLossBody;

/// The same loss in a micro-batch body (two micro-batches of one row).
const std::string kAccumulate = std::string(R"mlir(
func.func @step(%w: tensor<4xf32>, %x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %loss, %gw = train.accumulate microbatches = 2 params(%w : tensor<4xf32>)
      batch(%x : tensor<2x4xf32>) -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<1x4xf32>):)mlir") +
                                kLossBody;

/// Parses `source` in `context` and runs train-differentiate; returns
/// whether it succeeded and the text of the first error in `error`.
bool differentiate(MLIRContext &context, OwningOpRef<ModuleOp> &module,
                   std::string &error, const std::string &source = kStep) {
  module = parseSourceString<ModuleOp>(source, &context);
  if (!module)
    return false;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (error.empty())
      error = diag.str();
    return success();
  });
  PassManager pm(&context);
  pm.addPass(ga::createTrainDifferentiatePass());
  return succeeded(pm.run(*module));
}

DialectRegistry gaRegistry() {
  DialectRegistry registry;
  ga::registerGaDialects(registry);
  ga::registerGaUpstreamDialects(registry);
  return registry;
}

TEST(DifferentiableOp, WithoutAModelTheOpIsRefused) {
  MLIRContext context(gaRegistry());
  OwningOpRef<ModuleOp> module;
  std::string error;
  EXPECT_FALSE(differentiate(context, module, error));
  EXPECT_NE(error.find("'tensor.reshape' op cannot be differentiated"),
            std::string::npos)
      << error;
}

TEST(DifferentiableOp, OneExternalModelMakesItDifferentiable) {
  DialectRegistry registry = gaRegistry();
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ReshapeOp::attachInterface<ReshapeModel>(*ctx);
  });
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module;
  std::string error;
  ASSERT_TRUE(differentiate(context, module, error)) << error;
  ASSERT_TRUE(succeeded(verify(*module)));
  // The model's adjoint: the result's adjoint reshaped back, per reshape.
  int reshapes = 0;
  module->walk([&](tensor::ReshapeOp) { ++reshapes; });
  EXPECT_EQ(reshapes, 4);
  int steps = 0;
  module->walk([&](ga::train::StepOp) { ++steps; });
  EXPECT_EQ(steps, 0);
}

// In a micro-batch body, each contribution to a parameter gets an
// accumulator, also from a rule that sets the adjoint without asking for
// one: two accumulators for w, added in the finalize region.
TEST(DifferentiableOp, SetAdjointInAMicroBatchBodyAccumulates) {
  DialectRegistry registry = gaRegistry();
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ReshapeOp::attachInterface<SettingReshapeModel>(*ctx);
  });
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module;
  std::string error;
  ASSERT_TRUE(differentiate(context, module, error, kAccumulate)) << error;
  ASSERT_TRUE(succeeded(verify(*module)));
  ga::train::AccumulateOp acc;
  module->walk([&](ga::train::AccumulateOp op) { acc = op; });
  ASSERT_TRUE(acc && acc.isExplicit());
  // The loss's sum, then one accumulator per contribution to w.
  EXPECT_EQ(acc.getAccumulators().size(), 3u);
  int adds = 0;
  acc.getFinalize().walk([&](linalg::AddOp) { ++adds; });
  EXPECT_EQ(adds, 1);
}

TEST(DifferentiableOp, NeedsComeFromTheModel) {
  DialectRegistry registry = gaRegistry();
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ReshapeOp::attachInterface<ReshapeModel>(*ctx);
  });
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kStep, &context);
  ASSERT_TRUE(module);
  tensor::ReshapeOp reshape;
  module->walk([&](tensor::ReshapeOp op) { reshape = op; });
  ASSERT_TRUE(reshape);
  ga::AdjointNeeds needs = ga::getAdjointNeeds(reshape);
  EXPECT_TRUE(needs.differentiable);
  EXPECT_EQ(needs.operands, SmallVector<bool>({false, false}));
  // The generic's model: a sum's adjoint reads neither operand.
  linalg::GenericOp sum;
  module->walk([&](linalg::GenericOp op) { sum = op; });
  ASSERT_TRUE(sum);
  ga::AdjointNeeds sumNeeds = ga::getAdjointNeeds(sum);
  EXPECT_TRUE(sumNeeds.differentiable);
  EXPECT_EQ(sumNeeds.operands, SmallVector<bool>({false, false}));
}

} // namespace
