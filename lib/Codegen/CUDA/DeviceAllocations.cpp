//===- DeviceAllocations.cpp - The step's buffers from the CUDA runtime ---===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-device-allocations: on the LLVM dialect, the step's buffers are
// allocated by the CUDA runtime (ga_cuda_alloc and ga_cuda_free, device
// memory with a caching allocator) instead of MLIR's generic host
// allocation functions.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "train/TrainRuntime.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUDEVICEALLOCATIONSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

struct GaGpuDeviceAllocationsPass
    : ga::impl::GaGpuDeviceAllocationsPassBase<GaGpuDeviceAllocationsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const std::pair<StringRef, StringRef> renames[] = {
        {"_mlir_memref_to_llvm_alloc", "ga_cuda_alloc"},
        {"_mlir_memref_to_llvm_aligned_alloc", "ga_cuda_aligned_alloc"},
        {"_mlir_memref_to_llvm_free", "ga_cuda_free"}};
    for (auto [from, to] : renames) {
      auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(from);
      if (!func)
        continue;
      if (!func.isExternal()) {
        func.emitError() << "ga-gpu-device-allocations: @" << from
                         << " is defined in the module; expected the "
                            "declaration that memref lowering emits";
        return signalPassFailure();
      }
      if (module.lookupSymbol(to)) {
        func.emitError() << "ga-gpu-device-allocations: the module already "
                            "has @"
                         << to;
        return signalPassFailure();
      }
      if (failed(SymbolTable::replaceAllSymbolUses(
              func, StringAttr::get(&getContext(), to), module)))
        return signalPassFailure();
      SymbolTable::setSymbolName(func, to);
    }
  }
};

} // namespace
