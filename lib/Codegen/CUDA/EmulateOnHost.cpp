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

#include "Utils.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "train/TrainRuntime.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUEMULATEONHOSTPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// Each gpu.launch becomes the loop nest its grid and blocks run: blocks z,
/// y, x, then threads z, y, x, one after the other, the threads once per
/// phase of a kernel with barriers. The kernels that
/// ga-gpu-map-parallel-loops and ga-gpu-device-code make use no shared
/// memory and barriers only between phases, so this order computes what the
/// device computes.
struct GaGpuEmulateOnHostPass
    : ga::impl::GaGpuEmulateOnHostPassBase<GaGpuEmulateOnHostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches) {
      if (!ga::cuda::isPlainLaunch(launch)) {
        launch.emitError() << "ga-gpu-emulate-on-host: expects a synchronous "
                              "launch without shared or private memory "
                              "and without clusters";
        return signalPassFailure();
      }
      // Barriers in the kernel's body itself split it into phases; one in
      // a loop or branch has no such order.
      WalkResult nested = launch.getBody().walk([&](gpu::BarrierOp barrier) {
        if (barrier->getBlock() != &launch.getBody().front()) {
          barrier.emitError() << "ga-gpu-emulate-on-host: a barrier inside "
                                 "a loop or branch of a kernel cannot be "
                                 "emulated (only barriers in the kernel's "
                                 "body itself split it into phases)";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (nested.wasInterrupted())
        return signalPassFailure();
      if (failed(emulate(launch)))
        return signalPassFailure();
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

  /// The launch as loops: blocks z, y, x, and inside them, for each phase
  /// of the body (the operations between two barriers), threads z, y, x
  /// running that phase.
  LogicalResult emulate(gpu::LaunchOp launch) {
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    auto loopNest = [&](ArrayRef<Value> bounds) {
      SmallVector<Value> ivs;
      for (Value bound : bounds) {
        auto loop = scf::ForOp::create(b, loc, zero, bound, one);
        ivs.push_back(loop.getInductionVar());
        b.setInsertionPoint(loop.getBody()->getTerminator());
      }
      return ivs;
    };
    SmallVector<Value> blockIvs = loopNest({grid.z, grid.y, grid.x});
    Block &body = launch.getBody().front();
    gpu::KernelDim3 blockIds = launch.getBlockIds();
    gpu::KernelDim3 threadIds = launch.getThreadIds();
    gpu::KernelDim3 gridSize = launch.getGridSize();
    gpu::KernelDim3 blockSize = launch.getBlockSize();
    IRMapping blockMap;
    blockMap.map(blockIds.z, blockIvs[0]);
    blockMap.map(blockIds.y, blockIvs[1]);
    blockMap.map(blockIds.x, blockIvs[2]);
    blockMap.map(gridSize.x, grid.x);
    blockMap.map(gridSize.y, grid.y);
    blockMap.map(gridSize.z, grid.z);
    blockMap.map(blockSize.x, block.x);
    blockMap.map(blockSize.y, block.y);
    blockMap.map(blockSize.z, block.z);
    // The operations of each phase.
    SmallVector<SmallVector<Operation *>> phases(1);
    for (Operation &op : body.without_terminator()) {
      if (isa<gpu::BarrierOp>(op))
        phases.emplace_back();
      else
        phases.back().push_back(&op);
    }
    OpBuilder::InsertionGuard guard(b);
    Block *blockBody = b.getInsertionBlock();
    Block::iterator blockPoint = b.getInsertionPoint();
    for (ArrayRef<Operation *> phase : phases) {
      b.setInsertionPoint(blockBody, blockPoint);
      SmallVector<Value> threadIvs = loopNest({block.z, block.y, block.x});
      IRMapping map = blockMap;
      map.map(threadIds.z, threadIvs[0]);
      map.map(threadIds.y, threadIvs[1]);
      map.map(threadIds.x, threadIvs[2]);
      for (Operation *op : phase) {
        if (failed(recomputeUsedValues(b, op, body, map)))
          return failure();
        b.clone(*op, map);
      }
    }
    launch.erase();
    return success();
  }

  /// Clones into the phase being built, before `op`, what `op` (and the
  /// operations nested in it) uses from earlier phases of `body`: values
  /// of operations without memory effects and regions, themselves after
  /// what they use.
  LogicalResult recomputeUsedValues(OpBuilder &b, Operation *op, Block &body,
                                    IRMapping &map) {
    SmallVector<Value> used;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!map.contains(operand) && operand.getParentBlock() == &body)
          used.push_back(operand);
    });
    for (Value value : used) {
      if (map.contains(value))
        continue;
      Operation *def = value.getDefiningOp();
      if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def)) {
        op->emitError() << "ga-gpu-emulate-on-host: uses a value from before "
                           "a barrier that an operation with memory effects "
                           "or regions computes (only pure values are "
                           "computed again after a barrier)";
        return failure();
      }
      if (failed(recomputeUsedValues(b, def, body, map)))
        return failure();
      b.clone(*def, map);
    }
    return success();
  }
};

} // namespace
