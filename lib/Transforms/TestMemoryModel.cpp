//===- TestMemoryModel.cpp - The memory model's answers as remarks --------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/BufferMemory.h"
#include "ga/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace ga {
#define GEN_PASS_DEF_TESTTRAINMEMORYMODELPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;

/// Whether some function of `module` still computes on tensors.
static bool needsBufferization(ModuleOp module) {
  bool tensors = false;
  module.walk([&](func::FuncOp function) {
    for (Type type : function.getFunctionType().getInputs())
      tensors |= isa<TensorType>(type);
    for (Type type : function.getFunctionType().getResults())
      tensors |= isa<TensorType>(type);
  });
  return tensors;
}

namespace {
struct TestTrainMemoryModelPass
    : ga::impl::TestTrainMemoryModelPassBase<TestTrainMemoryModelPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OwningOpRef<ModuleOp> copy;
    ModuleOp simulated = module;
    if (needsBufferization(module)) {
      // The pipeline by name: this library does not link the pipelines.
      copy = module.clone();
      // A pass manager of its own: the copy is not nested in the module.
      PassManager pm(module.getContext());
      std::string text =
          "ga-pipeline{buffers-only=true " + pipelineOptions.getValue() + "}";
      if (failed(parsePassPipeline(text, pm))) {
        module.emitError("test-train-memory-model: cannot build '")
            << text << "'";
        return signalPassFailure();
      }
      if (failed(pm.run(*copy)))
        return signalPassFailure();
      simulated = *copy;
    }
    for (func::FuncOp original : module.getOps<func::FuncOp>()) {
      if (original.isExternal() || original.isPrivate())
        continue;
      auto function =
          simulated.lookupSymbol<func::FuncOp>(original.getSymName());
      if (!function) {
        original.emitError("test-train-memory-model: @")
            << original.getSymName() << " is not a function after the "
            << "pipeline";
        return signalPassFailure();
      }
      FailureOr<ga::BufferMemoryProfile> profile =
          ga::simulateBufferMemory(function);
      if (failed(profile))
        return signalPassFailure();
      InFlightDiagnostic remark = original.emitRemark();
      remark << "memory model: peak " << profile->peakBytes << " bytes, "
             << profile->allocations << " allocations, "
             << profile->returnedBytes << " bytes returned";
      if (profile->assumedOwnership)
        remark << " (ownership assumed at run-time conditions)";
      if (profile->peakAt)
        remark.attachNote(profile->peakAt->getLoc())
            << "the peak is reached at this allocation";
      for (const ga::LiveAllocation &live : profile->liveAtPeak)
        remark.attachNote(live.alloc->getLoc())
            << "alive at the peak: " << live.bytes << " bytes in " << live.count
            << (live.count == 1 ? " buffer" : " buffers");
    }
  }
};
} // namespace
