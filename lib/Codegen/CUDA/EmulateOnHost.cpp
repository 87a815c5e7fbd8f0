//===- EmulateOnHost.cpp - The device program, run on the CPU -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-emulate-on-host: each gpu.launch becomes the loop nest of its
// blocks and threads, so that the device program runs on the CPU and the
// mapping's results are checked without a GPU.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "train/TrainRuntime.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUEMULATEONHOSTPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// Each gpu.launch becomes the loop nest its grid and blocks run: blocks z,
/// y, x, then threads z, y, x, one after the other. The kernels that
/// ga-gpu-map-parallel-loops and ga-gpu-device-code make use no shared
/// memory and no barrier, so this order computes what the device computes.
struct GaGpuEmulateOnHostPass
    : ga::impl::GaGpuEmulateOnHostPassBase<GaGpuEmulateOnHostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches) {
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
          launch.getDynamicSharedMemorySize() ||
          !launch.getWorkgroupAttributions().empty() ||
          !launch.getPrivateAttributions().empty() || launch.hasClusterSize()) {
        launch.emitError() << "ga-gpu-emulate-on-host: expects a synchronous "
                              "launch without shared or private memory "
                              "and without clusters";
        return signalPassFailure();
      }
      bool barrier =
          launch.getBody()
              .walk([](gpu::BarrierOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
      if (barrier) {
        launch.emitError() << "ga-gpu-emulate-on-host: a kernel with "
                              "barriers cannot run its threads one after "
                              "the other";
        return signalPassFailure();
      }
      emulate(launch);
    }
    // The vector accesses' alignments hold for the device allocator's
    // buffers, not necessarily for the host's.
    module.walk([](Operation *access) {
      if (isa<vector::LoadOp, vector::StoreOp>(access))
        access->removeAttr("alignment");
    });
    // The runtime's reads of device memory and its GEMMs become the host
    // runtime's.
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (func.isExternal() && func.getSymName().starts_with("ga_cuda_")) {
        std::string host = ("ga_host_" + func.getSymName().drop_front(8)).str();
        if (failed(SymbolTable::replaceAllSymbolUses(
                func, StringAttr::get(&getContext(), host), module)))
          return signalPassFailure();
        SymbolTable::setSymbolName(func, host);
      }
  }

  void emulate(gpu::LaunchOp launch) {
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value bounds[] = {grid.z, grid.y, grid.x, block.z, block.y, block.x};
    SmallVector<Value> ivs;
    for (Value bound : bounds) {
      auto loop = scf::ForOp::create(b, loc, zero, bound, one);
      ivs.push_back(loop.getInductionVar());
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    Block &body = launch.getBody().front();
    gpu::KernelDim3 blockIds = launch.getBlockIds();
    gpu::KernelDim3 threadIds = launch.getThreadIds();
    gpu::KernelDim3 gridSize = launch.getGridSize();
    gpu::KernelDim3 blockSize = launch.getBlockSize();
    IRMapping map;
    map.map(blockIds.z, ivs[0]);
    map.map(blockIds.y, ivs[1]);
    map.map(blockIds.x, ivs[2]);
    map.map(threadIds.z, ivs[3]);
    map.map(threadIds.y, ivs[4]);
    map.map(threadIds.x, ivs[5]);
    map.map(gridSize.x, grid.x);
    map.map(gridSize.y, grid.y);
    map.map(gridSize.z, grid.z);
    map.map(blockSize.x, block.x);
    map.map(blockSize.y, block.y);
    map.map(blockSize.z, block.z);
    for (Operation &op : body.without_terminator())
      b.clone(op, map);
    launch.erase();
  }
};

} // namespace
