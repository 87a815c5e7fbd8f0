//===- PipelineOptionsTest.cpp - ga-pipeline's options as text ------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The enumerated options (ga/Utils/Choices.h) read every spelling, refuse
// any other, and print back what they read, so that a pipeline's options
// survive the text round trip of the command line; the CUDA-only options
// reach the CUDA half only through GaPipelineOptions::cudaTarget.
//
//===----------------------------------------------------------------------===//

#include "ga/Pipelines/Pipelines.h"

#include <gtest/gtest.h>

using namespace ga;

namespace {

template <typename E> void expectRoundTrip() {
  for (llvm::StringLiteral name : choiceNames<E>()) {
    std::optional<E> parsed = parseChoice<E>(name);
    ASSERT_TRUE(parsed.has_value()) << name.str();
    EXPECT_EQ(choiceName(*parsed), name);
  }
  EXPECT_FALSE(parseChoice<E>("").has_value());
  EXPECT_FALSE(parseChoice<E>("nonsense").has_value());
}

TEST(Choices, EverySpellingRoundTrips) {
  expectRoundTrip<Target>();
  expectRoundTrip<GpuFormat>();
  expectRoundTrip<Precision>();
  expectRoundTrip<BatchStatistics>();
  expectRoundTrip<OffloadCopies>();
  EXPECT_EQ(choiceList<GpuFormat>(), "bin, fatbin, isa or none");
  EXPECT_EQ(choiceList<Target>(), "cpu or cuda");
}

TEST(PipelineOptions, PrintedOptionsParseToTheSameOptions) {
  GaPipelineOptions options;
  ASSERT_TRUE(succeeded(options.parseFromString(
      "target=cuda gpu-format=isa precision=bf16-mixed "
      "batch-statistics=prepass offload-copies=hidden memory-budget=7")));
  EXPECT_EQ(options.target.getValue(), Target::CUDA);
  EXPECT_EQ(options.gpuFormat.getValue(), GpuFormat::Isa);
  EXPECT_EQ(options.precision.getValue(), Precision::BF16Mixed);
  EXPECT_EQ(options.batchStatistics.getValue(), BatchStatistics::Prepass);
  EXPECT_EQ(options.offloadCopies.getValue(), OffloadCopies::Hidden);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  options.print(os);
  EXPECT_NE(printed.find("gpu-format=isa"), std::string::npos) << printed;
  GaPipelineOptions again;
  ASSERT_TRUE(succeeded(
      again.parseFromString(llvm::StringRef(printed).drop_front().drop_back())))
      << printed;
  std::string reprinted;
  llvm::raw_string_ostream os2(reprinted);
  again.print(os2);
  EXPECT_EQ(printed, reprinted);
}

TEST(PipelineOptions, UnknownChoiceIsRefused) {
  GaPipelineOptions options;
  std::string errors;
  llvm::raw_string_ostream os(errors);
  EXPECT_TRUE(failed(options.parseFromString("precision=fp8", os)));
  EXPECT_EQ(options.precision.getValue(), Precision::F32);
}

TEST(PipelineOptions, CudaOptionsOnlyForTheCudaTarget) {
  GaPipelineOptions cpu;
  EXPECT_FALSE(cpu.cudaTarget().has_value());
  GaPipelineOptions cuda;
  ASSERT_TRUE(succeeded(cuda.parseFromString(
      "target=cuda gpu-fusion=false gpu-row-fusion=true host-offload=true "
      "memory-budget=1000 offload-budget=0")));
  std::optional<CudaTargetOptions> projected = cuda.cudaTarget();
  ASSERT_TRUE(projected.has_value());
  EXPECT_FALSE(projected->kernels.fusion);
  // Row fusion is a kind of fusion: off with it.
  EXPECT_FALSE(projected->kernels.rowFusion);
  ASSERT_TRUE(projected->offload.has_value());
  // offload-budget=0: offloading aims for memory-budget.
  EXPECT_EQ(projected->offload->budget, 1000);
}

} // namespace
