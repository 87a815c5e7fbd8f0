//===- TrainDialectTest.cpp - Unit tests of the train dialect -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/InitAll.h"
#include "ga/Transforms/Passes.h"
#include "train/MemoryPlan.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ga::train;

namespace {

/// A context with everything ga-opt registers.
class TrainDialectTest : public ::testing::Test {
protected:
  TrainDialectTest() {
    DialectRegistry registry;
    ga::registerGaDialects(registry);
    ga::registerGaUpstreamDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Builds, inside a fresh function of a fresh module, a step with one
  /// parameter w [4, 3] and batch operands x [B, 4], y [B] (i64) whose loss
  /// is the mean cross-entropy of x w against y; returns the step.
  StepOp buildStep(OpBuilder &builder, int64_t batchSize, int64_t microbatches,
                   int64_t dataParallel) {
    Location loc = builder.getUnknownLoc();
    module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
    Type f32 = builder.getF32Type();
    auto wType = RankedTensorType::get({4, 3}, f32);
    auto xType = RankedTensorType::get({batchSize, 4}, f32);
    auto yType = RankedTensorType::get({batchSize}, builder.getI64Type());
    auto lossType = RankedTensorType::get({}, f32);
    auto countType = RankedTensorType::get({}, builder.getI64Type());
    auto func = func::FuncOp::create(
        builder, loc, "step",
        builder.getFunctionType({wType, xType, yType}, {lossType}));
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToEnd(entry);

    auto step = StepOp::create(
        builder, loc, ValueRange{entry->getArgument(0)},
        ValueRange{entry->getArgument(1), entry->getArgument(2)}, lossType,
        TypeRange{countType}, microbatches, dataParallel);
    func::ReturnOp::create(builder, loc, ValueRange{step.getLoss()});

    builder.setInsertionPointToEnd(&step.getBody().front());
    Value w = step.getParamArgs()[0];
    Value x = step.getBatchArgs()[0];
    Value y = step.getBatchArgs()[1];
    auto logitsType = RankedTensorType::get({batchSize, 3}, f32);
    Value zero = arith::ConstantOp::create(builder, loc, f32,
                                           builder.getF32FloatAttr(0.0));
    Value init =
        tensor::EmptyOp::create(builder, loc, logitsType.getShape(), f32);
    Value filled =
        linalg::FillOp::create(builder, loc, zero, init).getResult(0);
    Value logits =
        linalg::MatmulOp::create(builder, loc, TypeRange{logitsType},
                                 ValueRange{x, w}, ValueRange{filled})
            .getResult(0);
    auto ce = CrossEntropyOp::create(builder, loc, lossType, countType, logits,
                                     y, /*init=*/Value(), Reduction::Mean,
                                     /*ignore_index=*/-100);
    YieldOp::create(builder, loc, ValueRange{ce.getLoss(), ce.getCount()});
    return step;
  }

  /// Verifies `op` and returns the first error message (empty if none).
  std::string verifyAndGetError(Operation *op) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (message.empty() && diag.getSeverity() == DiagnosticSeverity::Error)
        message = diag.str();
      return success();
    });
    if (succeeded(verify(op)))
      return "";
    return message;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(TrainDialectTest, BuildsAndVerifiesAStep) {
  OpBuilder builder(&context);
  StepOp step = buildStep(builder, /*batchSize=*/8, /*microbatches=*/2,
                          /*dataParallel=*/2);
  EXPECT_EQ(verifyAndGetError(*module), "");
  EXPECT_EQ(step.getBatchSize(), std::optional<int64_t>(8));
  EXPECT_EQ(step.getParamArgs().size(), 1u);
  EXPECT_EQ(step.getBatchArgs().size(), 2u);
  ASSERT_EQ(step.getGrads().size(), 1u);
  EXPECT_EQ(step.getGrads()[0].getType(), step.getParams()[0].getType());
  EXPECT_EQ(step.getMicrobatches(), 2u);
  EXPECT_EQ(step.getDataParallel(), 2u);
  EXPECT_EQ(step.getYield().getValues().size(), 2u);
}

TEST_F(TrainDialectTest, RejectsAnIndivisibleBatch) {
  OpBuilder builder(&context);
  buildStep(builder, /*batchSize=*/8, /*microbatches=*/3, /*dataParallel=*/1);
  EXPECT_EQ(verifyAndGetError(*module),
            "'train.step' op global batch size 8 is not divisible by "
            "microbatches * data_parallel = 3");
}

TEST_F(TrainDialectTest, RejectsAWrongGradientType) {
  OpBuilder builder(&context);
  StepOp step = buildStep(builder, 8, 1, 1);
  step.getGrads()[0].setType(
      RankedTensorType::get({3, 4}, builder.getF32Type()));
  EXPECT_EQ(verifyAndGetError(*module),
            "'train.step' op gradient #0 has type 'tensor<3x4xf32>', but "
            "parameter #0 has type 'tensor<4x3xf32>'");
}

TEST_F(TrainDialectTest, RejectsAMisnamedIgnoreIndex) {
  OpBuilder builder(&context);
  StepOp step = buildStep(builder, 8, 1, 1);
  CrossEntropyOp ce = *step.getBody().getOps<CrossEntropyOp>().begin();
  ce.setIgnoreIndex(1);
  EXPECT_EQ(verifyAndGetError(*module),
            "'train.cross_entropy' op ignore_index = 1 is a valid class index "
            "in [0, 3): real tokens of that class would be ignored");
}

TEST_F(TrainDialectTest, ParsesAndInlinesCheckpoints) {
  const char *source = R"mlir(
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %r = train.checkpoint (%x : tensor<4xf32>) -> tensor<4xf32> {
      ^bb0(%a: tensor<4xf32>):
        %t = math.tanh %a : tensor<4xf32>
        train.yield %t : tensor<4xf32>
      }
      return %r : tensor<4xf32>
    }
  )mlir";
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(parsed);
  int before = 0;
  parsed->walk([&](CheckpointOp) { ++before; });
  EXPECT_EQ(before, 1);

  PassManager pm(&context);
  pm.addPass(ga::createTrainInlineCheckpointsPass());
  ASSERT_TRUE(succeeded(pm.run(*parsed)));
  int after = 0;
  parsed->walk([&](CheckpointOp) { ++after; });
  EXPECT_EQ(after, 0);
  EXPECT_TRUE(succeeded(verify(*parsed)));
}

TEST_F(TrainDialectTest, ReportsParseErrorsWithALocation) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(message);
    os << diag.getLocation() << ": " << diag.str();
    return success();
  });
  const char *source = R"mlir(
    func.func @f(%l: tensor<4x5xf32>, %y: tensor<4xf32>) {
      %r = train.cross_entropy mean %l, %y ignore_index = -100
          : (tensor<4x5xf32>, tensor<4xf32>) -> tensor<f32>
      return
    }
  )mlir";
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(source, &context, "inline.mlir");
  EXPECT_FALSE(parsed);
  EXPECT_NE(message.find("\"inline.mlir\":3:12"), std::string::npos) << message;
  EXPECT_NE(message.find("labels must be a rank-1 integer tensor [N], got "
                         "'tensor<4xf32>'"),
            std::string::npos)
      << message;
}

/// train.memory_plan's record: written and read back through its struct,
/// and a dictionary without an entry the verifier needs names it.
TEST_F(TrainDialectTest, MemoryPlanRecordRoundTrips) {
  Builder builder(&context);
  MemoryPlanRecord record;
  record.budget = 150000;
  record.peak = 149520;
  record.unplanned = 220496;
  record.checkpoints = 4;
  record.units = 9;
  record.recomputed = "69.6%";
  record.choice = "auto";
  DictionaryAttr attr = record.toAttr(builder);
  EXPECT_EQ(MemoryPlanRecord::missingEntry(attr), "");
  EXPECT_FALSE(attr.get("copies")) << "no copies without host offload";
  MemoryPlanRecord back = MemoryPlanRecord::fromAttr(attr);
  EXPECT_EQ(back.budget, 150000);
  EXPECT_EQ(back.peak, 149520);
  EXPECT_EQ(back.unplanned, 220496);
  EXPECT_EQ(back.checkpoints, 4);
  EXPECT_EQ(back.units, 9);
  EXPECT_EQ(back.recomputed, "69.6%");
  EXPECT_EQ(back.choice, "auto");
  EXPECT_EQ(back.copies, "");
  record.copies = "3.1%";
  EXPECT_EQ(MemoryPlanRecord::fromAttr(record.toAttr(builder)).copies, "3.1%");
  DictionaryAttr partial = builder.getDictionaryAttr(
      {builder.getNamedAttr("budget", builder.getI64IntegerAttr(1))});
  EXPECT_EQ(MemoryPlanRecord::missingEntry(partial), "peak");
  EXPECT_EQ(MemoryPlanRecord::attrName(), "train.memory_plan");
}

} // namespace
