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
// modules that are the same operations once their own names are set aside
// (the module's symbol and its kernels') hold the same code: the launches
// of the second are redirected to the first, and the second goes. The
// modules are renamed to one name while they are compared, so that MLIR's
// own structural equivalence (OperationEquivalence: every operation, its
// attributes and properties, types and operands, the regions with their
// values matched, locations aside) decides; a hash of the same walk sorts
// them into buckets first. Attributes are compared by identity (they are
// uniqued), so a large constant copied into a kernel costs nothing.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUDEDUPKERNELSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// A hash of every operation of `module` as OperationEquivalence compares
/// them (names, attributes and properties, types; not values, whose
/// equivalence the comparison establishes; not locations).
llvm::hash_code structuralHash(gpu::GPUModuleOp module) {
  llvm::hash_code hash = 0;
  module->walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
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
    // Every module and its kernels under one set of names while they are
    // compared; the names each had, to restore.
    SmallVector<gpu::GPUModuleOp> modules =
        llvm::to_vector(root.getOps<gpu::GPUModuleOp>());
    DenseMap<Operation *, StringAttr> names;
    auto rename = [&](Operation *op, StringRef name) {
      names[op] = SymbolTable::getSymbolName(op);
      SymbolTable::setSymbolName(op, name);
    };
    for (gpu::GPUModuleOp module : modules) {
      rename(module, "ga_kernel_module");
      unsigned count = 0;
      for (auto func : module.getOps<gpu::GPUFuncOp>())
        rename(func, ("ga_kernel_" + llvm::Twine(count++)).str());
    }
    // Each module's first equivalent among those before it, if any.
    DenseMap<llvm::hash_code, SmallVector<gpu::GPUModuleOp>> buckets;
    SmallVector<std::pair<gpu::GPUModuleOp, gpu::GPUModuleOp>> sameAs;
    for (gpu::GPUModuleOp module : modules) {
      SmallVector<gpu::GPUModuleOp> &bucket = buckets[structuralHash(module)];
      auto kept = llvm::find_if(bucket, [&](gpu::GPUModuleOp other) {
        return OperationEquivalence::isEquivalentTo(
            module, other, OperationEquivalence::IgnoreLocations);
      });
      if (kept == bucket.end())
        bucket.push_back(module);
      else
        sameAs.push_back({module, *kept});
    }
    for (auto [op, name] : names)
      SymbolTable::setSymbolName(op, name);

    // The kernel each removed module's kernels are replaced by, by name.
    llvm::DenseMap<SymbolRefAttr, SymbolRefAttr> replacement;
    SmallVector<gpu::GPUModuleOp> duplicates;
    for (auto [module, kept] : sameAs) {
      auto keptFuncs = llvm::to_vector(kept.getOps<gpu::GPUFuncOp>());
      auto funcs = llvm::to_vector(module.getOps<gpu::GPUFuncOp>());
      // Equivalent: the same kernels in the same order.
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
    // (One walk of the host code for every use: a model's host function
    // holds thousands of launches.)
    llvm::DenseSet<StringAttr> used;
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(&root.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        used.insert(use.getSymbolRef().getRootReference());
    for (gpu::GPUModuleOp module : duplicates)
      if (!used.contains(module.getSymNameAttr()))
        module->erase();
  }
};

} // namespace
