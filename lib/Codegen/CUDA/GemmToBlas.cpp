//===- GemmToBlas.cpp - Matrix products through cuBLAS --------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-gemm-to-blas: every bufferized contraction that BlasMatchers.h
// recognizes becomes a call of the CUDA runtime's GEMM entry points
// (cuBLAS, or cuBLASLt with a bias epilogue), host loops around the
// batch dimensions that one strided batch cannot cover.
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
      std::optional<BiasEpilogue> epilogue;
      if (biasEpilogue)
        epilogue = matchBiasEpilogue(op, form);
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
  /// the fill, the product, the addition and C go.
  void replaceWithBias(linalg::LinalgOp op, const BlasForm &f,
                       const BiasEpilogue &e) {
    OpBuilder builder(e.add);
    Location loc = op.getLoc();
    std::string name = ("ga_cuda_gemm_bias_f32" + precisionSuffix(f)).str();
    Type i32 = builder.getI32Type(), index = builder.getIndexType();
    SmallVector<Type> types = {i32, i32};
    types.append(14, index);
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

  /// Without batch dimensions and scale, `ga_cuda_gemm_f32(transA, transB,
  /// accumulate, m, n, k, A, offset, lda, B, offset, ldb, C, offset,
  /// ldc)`; otherwise `ga_cuda_gemm_batched_f32(transA, transB,
  /// accumulate, m, n, k, count, alpha, order, A, offset, lda, strideA, B,
  /// ..., C, ...)` over the last batch dimension (count 1 without one),
  /// inside host loops over the others. Aligned pointers; offsets, leading
  /// dimensions and strides in elements; `accumulate` 0 for a product from
  /// zero (its fill goes), else 1.
  void replace(linalg::LinalgOp op, const BlasForm &f) {
    OpBuilder builder(op);
    Location loc = op.getLoc();
    bool batched = !f.batch.empty() || f.alpha;
    std::string name =
        (Twine(batched ? "ga_cuda_gemm_batched_f32" : "ga_cuda_gemm_f32") +
         precisionSuffix(f))
            .str();
    Type i32 = builder.getI32Type(), index = builder.getIndexType();
    SmallVector<Type> types = {i32, i32, i32};
    if (batched) {
      types.append(4, index);
      types.append({builder.getF32Type(), i32});
      types.append(12, index);
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
    if (batched) {
      operands.push_back(
          constant(f.batch.empty() ? 1 : f.bounds[f.batch.back()]));
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
      const SmallVector<int64_t> *strides;
    };
    SmallVector<Matrix> matrices;
    for (auto [operand, ld, strides] :
         {std::make_tuple(f.a, f.lda, &f.strideA),
          std::make_tuple(f.b, f.ldb, &f.strideB),
          std::make_tuple(f.c, f.ldc, &f.strideC)}) {
      Value buffer = operand->get();
      auto metadata =
          memref::ExtractStridedMetadataOp::create(builder, loc, buffer);
      matrices.push_back(
          {memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, buffer),
           metadata.getOffset(), constant(ld), strides});
    }
    SmallVector<Value> batchStrides;
    if (batched)
      for (const Matrix &matrix : matrices)
        batchStrides.push_back(
            constant(f.batch.empty() ? 0 : (*matrix.strides)[f.batch.back()]));
    // Host loops over the other batch dimensions advance the offsets.
    ArrayRef<unsigned> outer = f.batch.empty()
                                   ? ArrayRef<unsigned>()
                                   : ArrayRef<unsigned>(f.batch).drop_back();
    for (unsigned dim : outer) {
      SmallVector<Value> strides;
      for (const Matrix &matrix : matrices)
        strides.push_back((*matrix.strides)[dim]
                              ? constant((*matrix.strides)[dim])
                              : Value());
      auto loop = scf::ForOp::create(builder, loc, constant(0),
                                     constant(f.bounds[dim]), constant(1));
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
      if (batched)
        operands.push_back(batchStrides[i]);
    }
    func::CallOp::create(builder, loc, callee, operands);
    op->erase();
  }
};

} // namespace
