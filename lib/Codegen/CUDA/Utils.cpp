//===- Utils.cpp - Helpers of the CUDA passes -----------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

bool ga::cuda::insideKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

Value ga::cuda::viewSource(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    value = view.getViewSource();
  }
  return value;
}

func::FuncOp ga::cuda::declareRuntimeFunction(ModuleOp module, StringRef name,
                                              FunctionType type, Location loc) {
  if (auto callee = module.lookupSymbol<func::FuncOp>(name))
    return callee;
  OpBuilder builder(module.getBodyRegion());
  auto callee = func::FuncOp::create(builder, loc, name, type);
  callee.setPrivate();
  return callee;
}

bool ga::cuda::isPlainLaunch(gpu::LaunchOp launch) {
  return !launch.getAsyncToken() && launch.getAsyncDependencies().empty() &&
         !launch.getDynamicSharedMemorySize() &&
         launch.getWorkgroupAttributions().empty() &&
         launch.getPrivateAttributions().empty() && !launch.hasClusterSize();
}

Operation *ga::cuda::createSingleThreadLaunch(OpBuilder &b, Operation *op) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  b.setInsertionPointToEnd(&launch.getBody().front());
  return gpu::TerminatorOp::create(b, loc);
}
