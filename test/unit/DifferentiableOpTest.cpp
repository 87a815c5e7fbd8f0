//===- DifferentiableOpTest.cpp - Adding a differentiable op --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Adding a differentiable op is writing one external model of
// DifferentiableOpInterface: tensor.pad has no adjoint in ga-opt, so
// train-differentiate refuses a step that pads parameters; with the model
// below (the example of docs/autodiff.md) attached, it differentiates it,
// and the adjoint needs come from the same model.
//
//===----------------------------------------------------------------------===//

#include "ga/InitAll.h"
#include "ga/Interfaces/DifferentiableOpInterface.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Transforms/Passes.h"
#include "train/TrainOps.h"

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

/// The slice of a tensor.pad's (static widths) result adjoint that its
/// source was copied to, at the low padding.
Value sourceSlice(tensor::PadOp pad, ga::ad::Sweep &sweep) {
  auto type = pad.getSourceType();
  SmallVector<int64_t> strides(type.getRank(), 1);
  return tensor::ExtractSliceOp::create(
      sweep.builder, pad.getLoc(), type, sweep.getAdjoint(pad.getResult()),
      ValueRange{}, ValueRange{}, ValueRange{}, pad.getStaticLow(),
      type.getShape(), strides);
}

/// The adjoint of tensor.pad: the source gets that slice.
struct PadModel
    : ga::DifferentiableOpInterface::ExternalModel<PadModel, tensor::PadOp> {
  LogicalResult buildAdjoint(Operation *op, ga::ad::Sweep &sweep) const {
    auto pad = cast<tensor::PadOp>(op);
    sweep.addAdjoint(op->getLoc(), pad.getSource(), sourceSlice(pad, sweep));
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
struct SettingPadModel
    : ga::DifferentiableOpInterface::ExternalModel<SettingPadModel,
                                                   tensor::PadOp> {
  LogicalResult buildAdjoint(Operation *op, ga::ad::Sweep &sweep) const {
    auto pad = cast<tensor::PadOp>(op);
    auto type = pad.getSourceType();
    Value slice = sourceSlice(pad, sweep);
    if (Value old = sweep.getAdjoint(pad.getSource())) {
      Value empty = tensor::EmptyOp::create(
          sweep.builder, op->getLoc(), type.getShape(), type.getElementType());
      slice = linalg::AddOp::create(sweep.builder, op->getLoc(),
                                    ValueRange{old, slice}, ValueRange{empty})
                  .getResult(0);
    }
    sweep.setAdjoint(pad.getSource(), slice);
    return success();
  }
  ga::AdjointNeeds getAdjointNeeds(Operation *op) const {
    return PadModel().getAdjointNeeds(op);
  }
};

/// The body of both inputs below: loss = sum(pad(w) + pad(w)) with two
/// paddings, two contributions to w's gradient, which is 2 everywhere.
constexpr const char *kLossBody = R"mlir(
    %zero = arith.constant 0.0 : f32
    %p1 = tensor.pad %pw low[1] high[3] {
    ^bb0(%i: index):
      tensor.yield %zero : f32
    } : tensor<4xf32> to tensor<8xf32>
    %p2 = tensor.pad %pw low[4] high[0] {
    ^bb0(%i: index):
      tensor.yield %zero : f32
    } : tensor<4xf32> to tensor<8xf32>
    %ec = tensor.empty() : tensor<8xf32>
    %c = linalg.add ins(%p1, %p2 : tensor<8xf32>, tensor<8xf32>) outs(%ec : tensor<8xf32>) -> tensor<8xf32>
    %e = tensor.empty() : tensor<f32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                         iterator_types = ["reduction"]}
        ins(%c : tensor<8xf32>) outs(%z : tensor<f32>) {
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
  EXPECT_NE(error.find("'tensor.pad' op cannot be differentiated"),
            std::string::npos)
      << error;
}

TEST(DifferentiableOp, OneExternalModelMakesItDifferentiable) {
  DialectRegistry registry = gaRegistry();
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::PadOp::attachInterface<PadModel>(*ctx);
  });
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module;
  std::string error;
  ASSERT_TRUE(differentiate(context, module, error)) << error;
  ASSERT_TRUE(succeeded(verify(*module)));
  // The model's adjoint: one slice of the result's adjoint per pad.
  int slices = 0;
  module->walk([&](tensor::ExtractSliceOp) { ++slices; });
  EXPECT_EQ(slices, 2);
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
    tensor::PadOp::attachInterface<SettingPadModel>(*ctx);
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
    tensor::PadOp::attachInterface<PadModel>(*ctx);
  });
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kStep, &context);
  ASSERT_TRUE(module);
  tensor::PadOp pad;
  module->walk([&](tensor::PadOp op) { pad = op; });
  ASSERT_TRUE(pad);
  ga::AdjointNeeds needs = ga::getAdjointNeeds(pad);
  EXPECT_TRUE(needs.differentiable);
  EXPECT_EQ(needs.operands, SmallVector<bool>({false}));
  // The generic's model: a sum's adjoint reads neither operand.
  linalg::GenericOp sum;
  module->walk([&](linalg::GenericOp op) { sum = op; });
  ASSERT_TRUE(sum);
  ga::AdjointNeeds sumNeeds = ga::getAdjointNeeds(sum);
  EXPECT_TRUE(sumNeeds.differentiable);
  EXPECT_EQ(sumNeeds.operands, SmallVector<bool>({false, false}));
}

} // namespace
