//===- SignatureTest.cpp - Unit tests of the step signature ---------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The text a step library records round-trips through parseSignature; a
// malformed or foreign text is refused with its line; the runtime's
// allocator counts what it holds.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Signature.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/ga_step.h"

#include "gtest/gtest.h"

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size);
extern "C" void _mlir_memref_to_llvm_free(void *pointer);

using namespace ga;

namespace {

StepSignature sample() {
  StepSignature sig;
  sig.entry = "mlp_step";
  sig.ranks = 2;
  sig.inputs = {{NpyDType::F32, {32, 64}, TensorRole::Aux},
                {NpyDType::I64, {8, 16}, TensorRole::Aux}};
  sig.results = {{NpyDType::F32, {}, TensorRole::Loss},
                 {NpyDType::F64, {32, 64}, TensorRole::Gradient},
                 {NpyDType::I32, {0, 3}, TensorRole::Aux}};
  return sig;
}

std::string parseError(const std::string &text) {
  StepSignature sig;
  std::string error;
  return parseSignature(text, sig, error) ? "ok" : error;
}

TEST(Signature, RoundTrips) {
  StepSignature sig = sample();
  std::string text = sig.format();
  EXPECT_EQ(text, "ga-step 1\nentry mlp_step\nranks 2\n"
                  "input 0 f32 32x64\ninput 1 i64 8x16\n"
                  "result 0 f32 scalar loss\nresult 1 f64 32x64 gradient\n"
                  "result 2 i32 0x3 aux\n");
  StepSignature back;
  std::string error;
  ASSERT_TRUE(parseSignature(text, back, error)) << error;
  EXPECT_EQ(back.format(), text);
  EXPECT_EQ(back.entry, "mlp_step");
  EXPECT_EQ(back.ranks, 2);
  ASSERT_EQ(back.results.size(), 3u);
  EXPECT_EQ(back.results[1].shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(back.results[1].role, TensorRole::Gradient);
  EXPECT_EQ(back.lossIndex(), std::optional<size_t>(0));
  EXPECT_EQ(back.inputs[0].describe(), "tensor<32x64xf32> (float32 (32, 64))");
  EXPECT_EQ(back.results[0].describe(), "tensor<f32> (float32 ())");
}

TEST(Signature, RefusesMalformedText) {
  EXPECT_NE(parseError("").find("empty"), std::string::npos);
  EXPECT_NE(parseError("ga-step 3\nentry a\n").find("version 3"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 0\nentry a\n").find("version 0"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 1\n").find("no 'entry'"), std::string::npos);
  EXPECT_NE(parseError("ga-step 1\nentry a\ninput 1 f32 4\n")
                .find("line 3 ('input 1 f32 4'): expected input #0"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 1\nentry a\ninput 0 f16 4\n")
                .find("unknown element type 'f16'"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 1\nentry a\ninput 0 f32 4xx3\n")
                .find("bad shape '4xx3'"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 1\nentry a\nresult 0 f32 4 weight\n")
                .find("unknown role 'weight'"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 1\nentry a\nranks 0\n").find("positive"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 1\nentry a\nbogus\n").find("unknown record"),
            std::string::npos);
}

// Named inputs make version 2, with a name record after the inputs; a
// step without names stays version 1, which readers of version 1 read.
TEST(Signature, RoundTripsNames) {
  StepSignature sig = sample();
  sig.inputs[0].name = "transformer.wte.weight";
  std::string text = sig.format();
  EXPECT_EQ(text, "ga-step 2\nentry mlp_step\nranks 2\n"
                  "input 0 f32 32x64\ninput 1 i64 8x16\n"
                  "name 0 transformer.wte.weight\n"
                  "result 0 f32 scalar loss\nresult 1 f64 32x64 gradient\n"
                  "result 2 i32 0x3 aux\n");
  StepSignature back;
  std::string error;
  ASSERT_TRUE(parseSignature(text, back, error)) << error;
  EXPECT_EQ(back.inputs[0].name, "transformer.wte.weight");
  EXPECT_EQ(back.inputs[1].name, "");
  EXPECT_EQ(back.format(), text);
}

TEST(Signature, RefusesMalformedNames) {
  // Version 1 has no name records.
  EXPECT_NE(parseError("ga-step 1\nentry a\ninput 0 f32 4\nname 0 w\n")
                .find("unknown record"),
            std::string::npos);
  EXPECT_NE(parseError("ga-step 2\nentry a\ninput 0 f32 4\nname 1 w\n")
                .find("a name for input #1, which is not listed before it"),
            std::string::npos);
  EXPECT_NE(
      parseError("ga-step 2\nentry a\ninput 0 f32 4\nname 0 w\nname 0 v\n")
          .find("input #0 is named twice"),
      std::string::npos);
  EXPECT_NE(parseError("ga-step 2\nentry a\ninput 0 f32 4\nname 0\n")
                .find("unknown record"),
            std::string::npos);
}

TEST(Signature, ChecksArguments) {
  StepSignature sig = sample();
  NpyArray good;
  good.dtype = NpyDType::F32;
  good.shape = {32, 64};
  EXPECT_EQ(checkArgument(sig, 0, good, "w.npy"), "");
  NpyArray wrong = good;
  wrong.shape = {64, 32};
  EXPECT_EQ(checkArgument(sig, 0, wrong, "w.npy"),
            "argument #0 ('w.npy'): expected tensor<32x64xf32> (float32 "
            "(32, 64)), got float32 (64, 32)");
  EXPECT_EQ(checkArgumentCount(sig, 1),
            "@mlp_step takes 2 argument(s), got 1 .npy file(s)");
  EXPECT_EQ(multiIndex({3, 4}, 7), "[1, 3]");
}

TEST(Memory, CountsWhatIsHeld) {
  ga_memory before, during, after;
  ga_memory_stats(&before);
  void *a = _mlir_memref_to_llvm_aligned_alloc(64, 1000);
  void *b = _mlir_memref_to_llvm_aligned_alloc(8, 24);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  ga_memory_stats(&during);
  EXPECT_EQ(during.current_bytes - before.current_bytes, 1024);
  EXPECT_GE(during.peak_bytes, during.current_bytes);
  EXPECT_EQ(during.allocations - before.allocations, 2);
  _mlir_memref_to_llvm_free(a);
  _mlir_memref_to_llvm_free(b);
  ga_memory_stats(&after);
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_GE(after.peak_bytes, before.current_bytes + 1024);
  ga_memory_reset_peak();
  ga_memory_stats(&after);
  EXPECT_EQ(after.peak_bytes, after.current_bytes);
}

TEST(Runtime, CopiesStridedBuffers) {
  // A 3x4 transposed view of a 4x3 int32 buffer (strides 1, 3, offset 1
  // after a leading element), copied into a 3x4 row-major buffer at offset
  // 2: every element where the index arithmetic puts it.
  std::vector<int32_t> src(13), dst(14, -1);
  for (int i = 0; i < 13; ++i)
    src[i] = i;
  const int64_t sizes[] = {3, 4}, srcStrides[] = {1, 3}, dstStrides[] = {4, 1};
  copyStrided(reinterpret_cast<char *>(dst.data()), 2, dstStrides,
              reinterpret_cast<const char *>(src.data()), 1, srcStrides, sizes,
              2, sizeof(int32_t));
  EXPECT_EQ(dst[0], -1);
  EXPECT_EQ(dst[1], -1);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(dst[2 + 4 * i + j], 1 + i + 3 * j) << i << ", " << j;
  // Contiguous rows of a strided 2-d buffer (a row pitch of 5): copied a
  // row at a time; a size-1 dimension with any stride is ignored.
  std::vector<int64_t> wide(10), packed(6, 0);
  for (int i = 0; i < 10; ++i)
    wide[i] = 100 + i;
  const int64_t rows[] = {2, 1, 3}, wideStrides[] = {5, 77, 1},
                packedStrides[] = {3, 3, 1};
  copyStrided(reinterpret_cast<char *>(packed.data()), 0, packedStrides,
              reinterpret_cast<const char *>(wide.data()), 0, wideStrides, rows,
              3, sizeof(int64_t));
  EXPECT_EQ(packed, (std::vector<int64_t>{100, 101, 102, 105, 106, 107}));
}

} // namespace
