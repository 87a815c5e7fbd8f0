//===- DedupKernels.cpp - One device module per distinct kernel -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-dedup-kernels: gpu-kernel-outlining makes one gpu.module per
// gpu.launch, so a model whose layers repeat the same operations compiles
// the same kernel once per layer and per use (1,931 modules for GPT-2
// 124M's step, each through NVVM, the LLVM NVPTX back end and ptxas). Two
// modules whose text is the same once their own names are set aside (the
// module's symbol and its kernel's) hold the same code: the launches of
// the second are redirected to the first, and the second goes. Whether
// two modules are the same is decided on their printed form, so that
// nothing the printer shows (types, attributes, constants copied into the
// module, the bodies) can differ between a module and the one it is
// replaced by.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUDEDUPKERNELSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// The text of `module` with its own name and its kernels' names replaced
/// by fixed ones (kernels numbered in order), or an empty string for a
/// module that holds anything but gpu.func kernels and what they read.
std::string canonicalText(gpu::GPUModuleOp module) {
  OwningOpRef<gpu::GPUModuleOp> copy(cast<gpu::GPUModuleOp>(module->clone()));
  SymbolTable::setSymbolName(*copy, "ga_kernel_module");
  unsigned count = 0;
  for (auto func : copy->getOps<gpu::GPUFuncOp>())
    SymbolTable::setSymbolName(func,
                               ("ga_kernel_" + llvm::Twine(count++)).str());
  std::string text;
  llvm::raw_string_ostream os(text);
  copy->print(os, OpPrintingFlags().useLocalScope());
  return text;
}

/// `@module::@func`, as gpu.launch_func names a kernel.
SymbolRefAttr kernelRef(gpu::GPUModuleOp module, gpu::GPUFuncOp func) {
  FlatSymbolRefAttr nested =
      FlatSymbolRefAttr::get(SymbolTable::getSymbolName(func));
  return SymbolRefAttr::get(SymbolTable::getSymbolName(module),
                            ArrayRef<FlatSymbolRefAttr>(nested));
}

struct GaGpuDedupKernelsPass
    : ga::impl::GaGpuDedupKernelsPassBase<GaGpuDedupKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp root = getOperation();
    // The kernel each removed module's kernels are replaced by, by name.
    llvm::DenseMap<SymbolRefAttr, SymbolRefAttr> replacement;
    llvm::StringMap<gpu::GPUModuleOp> first;
    SmallVector<gpu::GPUModuleOp> duplicates;
    for (auto module : root.getOps<gpu::GPUModuleOp>()) {
      auto [it, inserted] = first.try_emplace(canonicalText(module), module);
      if (inserted)
        continue;
      gpu::GPUModuleOp kept = it->second;
      auto keptFuncs = llvm::to_vector(kept.getOps<gpu::GPUFuncOp>());
      auto funcs = llvm::to_vector(module.getOps<gpu::GPUFuncOp>());
      // Same text: the same kernels in the same order.
      for (auto [func, keptFunc] : llvm::zip_equal(funcs, keptFuncs))
        replacement[kernelRef(module, func)] = kernelRef(kept, keptFunc);
      duplicates.push_back(module);
    }
    if (duplicates.empty())
      return;
    root.walk([&](gpu::LaunchFuncOp launch) {
      auto it = replacement.find(launch.getKernelAttr());
      if (it != replacement.end())
        launch.setKernelAttr(it->second);
    });
    // Anything else that names a removed module (a symbol use the launches
    // do not account for) keeps it.
    for (gpu::GPUModuleOp module : duplicates) {
      if (SymbolTable::symbolKnownUseEmpty(module, root))
        module->erase();
    }
  }
};

} // namespace
