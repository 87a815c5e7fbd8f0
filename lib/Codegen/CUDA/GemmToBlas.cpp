//===- GemmToBlas.cpp - Matrix products through cuBLAS --------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-gemm-to-blas: every bufferized contraction that BlasMatchers.h
// recognizes becomes a call of the CUDA runtime's GEMM entry points
// (cuBLAS, or cuBLASLt with a bias epilogue): batch dimensions that lie
// as one merged, one or two of them covered by the call, host loops around
// any others.
//
//===----------------------------------------------------------------------===//

#include "BlasMatchers.h"
#include "Utils.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "train/TrainRuntime.h"
#include "llvm/ADT/Sequence.h"

#include <array>
#include <limits>

namespace ga {
#define GEN_PASS_DEF_GAGPUGEMMTOBLASPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::cuda;

namespace {

struct GaGpuGemmToBlasPass
    : ga::impl::GaGpuGemmToBlasPassBase<GaGpuGemmToBlasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (allowTF32 && allowBF16) {
      module.emitError("ga-gpu-gemm-to-blas: allow-tf32 and allow-bf16 "
                       "exclude each other");
      return signalPassFailure();
    }
    std::vector<std::pair<linalg::LinalgOp, BlasForm>> contractions;
    module.walk([&](linalg::LinalgOp op) {
      if (insideKernel(op))
        return;
      if (std::optional<BlasForm> form = matchBlas(op))
        contractions.push_back({op, *form});
    });
    for (auto &[op, form] : contractions) {
      // A rounding to bfloat16 (precision=bf16) goes into the GEMM
      // whatever bias-epilogue says (the product then writes half the
      // bytes and no kernel reads them back to round them); a bias only
      // with bias-epilogue.
      std::optional<BiasEpilogue> epilogue =
          matchBiasEpilogue(op, form, /*biases=*/biasEpilogue);
      if (epilogue)
        replaceWithBias(op, form, *epilogue);
      else
        replace(op, form);
    }
  }

  /// The runtime function's suffix for the product's operands and the
  /// pass's precision: bfloat16 operands (precision=bf16-mixed) are read
  /// as stored, float32 ones as the pass allows.
  StringRef precisionSuffix(const BlasForm &f) const {
    if (f.bf16Inputs)
      return "_bf16in";
    return allowTF32 ? "_tf32" : allowBF16 ? "_bf16" : "";
  }

  /// `ga_cuda_gemm_bias_f32(transA, transB, m, n, k, A, offset, lda, B,
  /// offset, ldb, bias, offset, D, offset, ldd)` where the addition was;
  /// the fill, the product, the addition and C go. A rounded epilogue
  /// calls `ga_cuda_gemm_bias_bf16_bf16in` (the same operands), or
  /// `ga_cuda_gemm_bf16_bf16in` without a bias (no bias operands).
  void replaceWithBias(linalg::LinalgOp op, const BlasForm &f,
                       const BiasEpilogue &e) {
    OpBuilder builder(e.add);
    Location loc = op.getLoc();
    std::string name =
        e.rounded ? (e.bias ? "ga_cuda_gemm_bias_bf16_bf16in"
                            : "ga_cuda_gemm_bf16_bf16in")
                  : ("ga_cuda_gemm_bias_f32" + precisionSuffix(f)).str();
    Type i32 = builder.getI32Type(), index = builder.getIndexType();
    SmallVector<Type> types = {i32, i32};
    types.append(e.bias ? 14 : 12, index);
    func::FuncOp callee = declare(name, types, loc);
    auto constant = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(builder, loc, v);
    };
    SmallVector<Value> operands = {
        arith::ConstantIntOp::create(builder, loc, f.transA, 32),
        arith::ConstantIntOp::create(builder, loc, f.transB, 32),
        constant(f.bounds[f.m]), constant(f.bounds[f.n]),
        constant(f.bounds[f.k])};
    for (auto [buffer, ld] :
         {std::make_pair(f.a->get(), f.lda), std::make_pair(f.b->get(), f.ldb),
          std::make_pair(e.bias, int64_t(0)), std::make_pair(e.d, e.ldd)}) {
      if (!buffer)
        continue;
      auto metadata =
          memref::ExtractStridedMetadataOp::create(builder, loc, buffer);
      operands.push_back(
          memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, buffer));
      operands.push_back(metadata.getOffset());
      if (buffer != e.bias)
        operands.push_back(constant(ld));
    }
    auto call = func::CallOp::create(builder, loc, callee, operands);
    Operation *after = call;
    for (Operation *deferred : e.deferred) {
      deferred->moveAfter(after);
      after = deferred;
    }
    Value c = f.c->get();
    e.add->erase();
    op->erase();
    e.fill->erase();
    Operation *alloc = c.getDefiningOp();
    for (Operation *user : llvm::make_early_inc_range(c.getUsers()))
      user->erase(); // its deallocations
    alloc->erase();
  }

  func::FuncOp declare(StringRef name, TypeRange args, Location loc) {
    return declareRuntimeFunction(
        getOperation(), name, FunctionType::get(&getContext(), args, {}), loc);
  }

  /// One batch dimension as the call sees it: its iterations and each
  /// matrix's stride (A, B, C) along it.
  struct BatchLevel {
    int64_t bound;
    std::array<int64_t, 3> strides;
  };

  /// The product's batch dimensions, fewest first: unit dimensions dropped,
  /// and two dimensions that every matrix lays out as one (the outer one's
  /// stride the inner one's stride times its iterations, in A, B and C
  /// alike) merged into one, as a [b, h, s, d] block's b and h are. The
  /// widest stays last.
  static SmallVector<BatchLevel> batchLevels(const BlasForm &f) {
    SmallVector<BatchLevel> levels;
    for (unsigned dim : f.batch)
      if (f.bounds[dim] != 1)
        levels.push_back(
            {f.bounds[dim], {f.strideA[dim], f.strideB[dim], f.strideC[dim]}});
    auto fits = [](int64_t v) {
      return v <= std::numeric_limits<int32_t>::max();
    };
    bool merged = true;
    while (merged) {
      merged = false;
      for (unsigned outer = 0; outer < levels.size() && !merged; ++outer)
        for (unsigned inner = 0; inner < levels.size() && !merged; ++inner) {
          const BatchLevel &o = levels[outer], &i = levels[inner];
          if (outer == inner || !fits(o.bound * i.bound) ||
              !llvm::all_of(llvm::seq(0, 3), [&](int x) {
                return o.strides[x] == i.strides[x] * i.bound;
              }))
            continue;
          levels[inner].bound *= o.bound;
          levels.erase(levels.begin() + outer);
          merged = true;
        }
    }
    auto widest =
        llvm::max_element(levels, [](const BatchLevel &x, const BatchLevel &y) {
          return x.bound < y.bound;
        });
    if (widest != levels.end())
      std::rotate(widest, widest + 1, levels.end());
    return levels;
  }

  /// Without batch dimensions and scale, `ga_cuda_gemm_f32(transA, transB,
  /// accumulate, m, n, k, A, offset, lda, B, offset, ldb, C, offset,
  /// ldc)`. With one (after batchLevels), `ga_cuda_gemm_batched_f32(transA,
  /// transB, accumulate, m, n, k, count, alpha, order, A, offset, lda,
  /// strideA, B, ..., C, ...)`: one strided batch (count 1 without one).
  /// With two or more, `ga_cuda_gemm_batched2_f32(transA, transB,
  /// accumulate, m, n, k, outer, count, alpha, order, A, offset, lda,
  /// outerStrideA, strideA, B, ..., C, ...)` over the last two (the
  /// runtime's one call over outer x count products, such as the
  /// attention's heads of every sequence), inside host loops over the
  /// others. Aligned pointers; offsets, leading dimensions and strides in
  /// elements; `accumulate` 0 for a product from zero (its fill goes),
  /// else 1.
  void replace(linalg::LinalgOp op, const BlasForm &f) {
    OpBuilder builder(op);
    Location loc = op.getLoc();
    SmallVector<BatchLevel> levels = batchLevels(f);
    bool twoLevels = levels.size() >= 2;
    bool batched = !levels.empty() || f.alpha;
    std::string name = (Twine(twoLevels ? "ga_cuda_gemm_batched2_f32"
                              : batched ? "ga_cuda_gemm_batched_f32"
                                        : "ga_cuda_gemm_f32") +
                        precisionSuffix(f))
                           .str();
    Type i32 = builder.getI32Type(), index = builder.getIndexType();
    SmallVector<Type> types = {i32, i32, i32};
    if (batched) {
      types.append(twoLevels ? 5 : 4, index);
      types.append({builder.getF32Type(), i32});
      types.append(twoLevels ? 15 : 12, index);
    } else {
      types.append(12, index);
    }
    func::FuncOp callee = declare(name, types, loc);
    auto constant = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(builder, loc, v);
    };
    linalg::FillOp init = zeroInit(op, f);
    SmallVector<Value> operands = {
        arith::ConstantIntOp::create(builder, loc, f.transA, 32),
        arith::ConstantIntOp::create(builder, loc, f.transB, 32),
        arith::ConstantIntOp::create(builder, loc, init ? 0 : 1, 32),
        constant(f.bounds[f.m]),
        constant(f.bounds[f.n]),
        constant(f.bounds[f.k])};
    if (init)
      init->erase();
    // The levels the call covers, outer first, and those the host loops.
    ArrayRef<BatchLevel> called = ArrayRef<BatchLevel>(levels).take_back(
                             twoLevels ? 2 : 1),
                         looped = ArrayRef<BatchLevel>(levels).drop_back(
                             called.size());
    if (batched) {
      for (const BatchLevel &level : called)
        operands.push_back(constant(level.bound));
      if (called.empty())
        operands.push_back(constant(1));
      operands.push_back(f.alpha
                             ? f.alpha
                             : arith::ConstantOp::create(
                                   builder, loc, builder.getF32FloatAttr(1.0f))
                                   .getResult());
      operands.push_back(
          arith::ConstantIntOp::create(builder, loc, f.order, 32));
    }
    // Each matrix's pointer, base offset, leading dimension and strides,
    // before the host loops.
    struct Matrix {
      Value pointer, offset, ld;
    };
    SmallVector<Matrix> matrices;
    for (auto [operand, ld] :
         {std::make_pair(f.a, f.lda), std::make_pair(f.b, f.ldb),
          std::make_pair(f.c, f.ldc)}) {
      Value buffer = operand->get();
      auto metadata =
          memref::ExtractStridedMetadataOp::create(builder, loc, buffer);
      matrices.push_back(
          {memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, buffer),
           metadata.getOffset(), constant(ld)});
    }
    SmallVector<SmallVector<Value>> batchStrides(matrices.size());
    if (batched)
      for (auto [x, strides] : llvm::enumerate(batchStrides)) {
        for (const BatchLevel &level : called)
          strides.push_back(constant(level.strides[x]));
        if (called.empty())
          strides.push_back(constant(0));
      }
    // Host loops over the other batch dimensions advance the offsets.
    for (const BatchLevel &level : looped) {
      SmallVector<Value> strides;
      for (int64_t stride : level.strides)
        strides.push_back(stride ? constant(stride) : Value());
      auto loop = scf::ForOp::create(builder, loc, constant(0),
                                     constant(level.bound), constant(1));
      builder.setInsertionPoint(loop.getBody()->getTerminator());
      Value iv = loop.getInductionVar();
      for (auto [matrix, stride] : llvm::zip(matrices, strides)) {
        if (!stride)
          continue;
        Value step = arith::MulIOp::create(builder, loc, iv, stride);
        matrix.offset =
            arith::AddIOp::create(builder, loc, matrix.offset, step);
      }
    }
    for (auto [i, matrix] : llvm::enumerate(matrices)) {
      operands.append({matrix.pointer, matrix.offset, matrix.ld});
      llvm::append_range(operands, batchStrides[i]);
    }
    func::CallOp::create(builder, loc, callee, operands);
    op->erase();
  }
};

} // namespace
