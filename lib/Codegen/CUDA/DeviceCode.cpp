//===- DeviceCode.cpp - What host code is left, on the device -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-device-code: after convert-parallel-loops-to-gpu, whatever host
// code is left touching step memory goes to the device too: loop nests
// without a parallel dimension (full reductions: the loss sum, the token
// count) and stores run in single-thread kernels, scalars that host code
// reads (the label check's first invalid position) are copied back through
// the runtime (ga_cuda_read_*), and the constants that kernels read are
// referenced from inside the kernels so that outlining copies them to the
// device module. Calls that would hand step memory to host functions (the
// CPU collectives) are refused.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "train/TrainRuntime.h"
#include <algorithm>

namespace ga {
#define GEN_PASS_DEF_GAGPUDEVICECODEPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::cuda;

namespace {

/// Whether `op` reads or writes memory that a kernel must reach: a memref
/// load or store, or a region holding one.
bool touchesMemory(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (isa<memref::LoadOp, memref::StoreOp, linalg::LinalgOp>(inner))
      found = true;
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

bool containsLaunch(Operation *op) {
  return op->walk([](gpu::LaunchOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// A collective of the CPU runtime (`ga_all_reduce_<type>`,
/// `ga_reduce_scatter_<type>`, `ga_all_gather_<type>`), which the CUDA
/// runtime has for device buffers as `ga_cuda_...`.
bool isCollective(StringRef callee) {
  return callee.starts_with("ga_all_reduce_") ||
         callee.starts_with("ga_reduce_scatter_") ||
         callee.starts_with("ga_all_gather_");
}

/// The runtime's fused attention (`ga_attention_fwd_<type>`,
/// `ga_attention_bwd_<type>`, convert-train-to-linalg's attention-calls),
/// which the CUDA runtime has for device buffers as `ga_cuda_...` (cuDNN).
bool isAttentionCall(StringRef callee) {
  return callee.starts_with("ga_attention_");
}

bool containsHostCall(Operation *op) {
  return op->walk([](func::CallOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

struct GaGpuDeviceCodePass
    : ga::impl::GaGpuDeviceCodePassBase<GaGpuDeviceCodePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The collectives of a data-parallel step take device buffers on the
    // CUDA runtime (staged through host memory for MPI); any other host
    // function that would receive step memory is refused.
    WalkResult refused = module.walk([&](func::CallOp call) {
      if (insideKernel(call))
        return WalkResult::advance();
      bool memory = llvm::any_of(call.getOperandTypes(),
                                 [](Type t) { return isa<BaseMemRefType>(t); });
      if (!memory)
        return WalkResult::advance();
      StringRef callee = call.getCallee();
      if (isAttentionCall(callee) && callee != "ga_attention_fwd_bf16" &&
          callee != "ga_attention_bwd_bf16") {
        call.emitError()
            << "ga-gpu-device-code: the CUDA runtime's fused attention takes "
               "bfloat16 operands without a key mask or a cotangent of lse "
               "(ga_attention_fwd_bf16, ga_attention_bwd_bf16), not @"
            << callee;
        return WalkResult::interrupt();
      }
      if (isCollective(callee) || isAttentionCall(callee)) {
        std::string device = ("ga_cuda_" + callee.drop_front(3)).str();
        auto original = module.lookupSymbol<func::FuncOp>(callee);
        if (original && !module.lookupSymbol(device)) {
          OpBuilder b(original);
          auto declaration = func::FuncOp::create(b, original.getLoc(), device,
                                                  original.getFunctionType());
          declaration.setPrivate();
        }
        call.setCallee(device);
        return WalkResult::advance();
      }
      call.emitError() << "ga-gpu-device-code: the call to @" << callee
                       << " passes step memory to host code; the CUDA target "
                          "runs every operation on the device";
      return WalkResult::interrupt();
    });
    if (refused.wasInterrupted())
      return signalPassFailure();
    // Declarations left without a caller go.
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (func.isExternal() && isCollective(func.getSymName()) &&
          SymbolTable::symbolKnownUseEmpty(func, module))
        func.erase();

    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(moveToDevice(func.getBody())))
        return signalPassFailure();
    }
    // Host reads of single elements.
    SmallVector<memref::LoadOp> loads;
    module.walk([&](memref::LoadOp load) {
      if (!insideKernel(load))
        loads.push_back(load);
    });
    for (memref::LoadOp load : loads)
      if (failed(stageLoad(load)))
        return signalPassFailure();
    // Adjacent single-thread kernels run as one.
    if (fuseSingleThreads)
      for (auto func : module.getOps<func::FuncOp>())
        fuseSingleThreadLaunches(func.getBody());
    // Constants read by kernels are referenced inside them.
    module.walk([&](gpu::LaunchOp launch) { sinkGlobals(launch); });
  }

  /// Wraps the host operations of `region` that touch memory in
  /// single-thread kernels, recursing into the control flow that holds
  /// kernels already (the micro-batch loop).
  LogicalResult moveToDevice(Region &region) {
    for (Block &block : region) {
      for (Operation &op : llvm::make_early_inc_range(block)) {
        if (isa<gpu::LaunchOp>(op) || isa<memref::LoadOp>(op))
          continue;
        // Control flow that holds kernels or calls host functions (the
        // label check's error report) stays on the host; its contents are
        // visited.
        if (containsLaunch(&op) || containsHostCall(&op)) {
          for (Region &inner : op.getRegions())
            if (failed(moveToDevice(inner)))
              return failure();
          continue;
        }
        if (!touchesMemory(&op))
          continue;
        if (op.getNumResults() != 0) {
          return op.emitError()
                 << "ga-gpu-device-code: this host operation reads step "
                    "memory and returns a value the host uses; the CUDA "
                    "target cannot run it on the device";
        }
        if (!wrapThreadedInnermost(&op))
          wrapInKernel(&op);
      }
    }
    return success();
  }

  /// A loop nest whose innermost loop's iterations touch disjoint elements
  /// (the embedding gradient: grad[token[b, s], d] += dx[b, s, d], with d
  /// innermost) runs with one thread per iteration of that loop, each
  /// thread running the outer loops in order: every element is still
  /// updated in the same order as by one thread. Conditions: a perfect nest
  /// of scf.for without iteration arguments, constant bounds of the
  /// innermost loop, a body without regions whose every store's last index
  /// is the innermost induction variable, whose loads from a stored buffer
  /// use that store's indices, and whose other loads read other buffers.
  bool wrapThreadedInnermost(Operation *op) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || loop.getNumRegionIterArgs() != 0)
      return false;
    scf::ForOp inner = loop;
    while (true) {
      Block *body = inner.getBody();
      auto next = dyn_cast<scf::ForOp>(&body->front());
      if (!next)
        break;
      if (body->getOperations().size() != 2 || next.getNumRegionIterArgs())
        return false;
      inner = next;
    }
    if (inner == loop)
      return false; // A single loop: nothing stays sequential to share.
    auto lb = getConstantIntValue(inner.getLowerBound());
    auto ub = getConstantIntValue(inner.getUpperBound());
    auto step = getConstantIntValue(inner.getStep());
    if (!lb || !ub || !step || *step <= 0 || *ub <= *lb)
      return false;
    Value iv = inner.getInductionVar();
    DenseMap<Value, ValueRange> stored; // root -> indices of its store
    SmallVector<memref::LoadOp> loads;
    for (Operation &inside : inner.getBody()->without_terminator()) {
      if (inside.getNumRegions())
        return false;
      if (auto store = dyn_cast<memref::StoreOp>(inside)) {
        ValueRange indices = store.getIndices();
        Value root = viewSource(store.getMemRef());
        if (indices.empty() || indices.back() != iv || stored.count(root))
          return false;
        stored[root] = indices;
        if (root != store.getMemRef())
          return false; // Keep it simple: stores to the buffer itself.
      } else if (auto load = dyn_cast<memref::LoadOp>(inside)) {
        loads.push_back(load);
      } else if (!isMemoryEffectFree(&inside)) {
        return false;
      }
    }
    if (stored.empty())
      return false;
    for (memref::LoadOp load : loads) {
      Value root = viewSource(load.getMemRef());
      auto it = stored.find(root);
      if (it == stored.end())
        continue;
      if (load.getMemRef() != root ||
          !llvm::equal(load.getIndices(), it->second))
        return false;
    }
    int64_t trip = (*ub - *lb + *step - 1) / *step;
    int64_t threads = std::min<int64_t>(256, ((trip + 31) / 32) * 32);
    int64_t blocks = (trip + threads - 1) / threads;
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value gridX = arith::ConstantIndexOp::create(b, loc, blocks);
    Value blockX = arith::ConstantIndexOp::create(b, loc, threads);
    auto launch =
        gpu::LaunchOp::create(b, loc, gridX, one, one, blockX, one, one);
    b.setInsertionPointToEnd(&launch.getBody().front());
    auto terminator = gpu::TerminatorOp::create(b, loc);
    op->moveBefore(terminator);
    // The innermost loop becomes `if (i < trip) { iv = lb + i * step }`.
    b.setInsertionPoint(inner);
    Value i = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                              launch.getBlockSize().x),
        launch.getThreadIds().x);
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                              arith::ConstantIndexOp::create(b, loc, trip));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    Value index = arith::AddIOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, *lb),
        arith::MulIOp::create(b, loc, i,
                              arith::ConstantIndexOp::create(b, loc, *step)));
    Block *body = inner.getBody();
    iv.replaceAllUsesWith(index);
    Block *then = guard.thenBlock();
    then->getOperations().splice(Block::iterator(then->getTerminator()),
                                 body->getOperations(), body->begin(),
                                 Block::iterator(body->getTerminator()));
    inner.erase();
    return true;
  }

  void wrapInKernel(Operation *op) {
    OpBuilder b(op);
    op->moveBefore(createSingleThreadLaunch(b, op));
  }

  /// `%v = memref.load %m[%i, %j]` on the host becomes a read through the
  /// runtime of the element at the buffer's aligned pointer plus its linear
  /// offset.
  LogicalResult stageLoad(memref::LoadOp load) {
    if (load.use_empty()) {
      load.erase();
      return success();
    }
    Type element = load.getType();
    std::string name;
    if (element.isF32())
      name = "ga_cuda_read_f32";
    else if (element.isF64())
      name = "ga_cuda_read_f64";
    else if (element.isInteger(32))
      name = "ga_cuda_read_i32";
    else if (element.isInteger(64))
      name = "ga_cuda_read_i64";
    else
      return load.emitError()
             << "ga-gpu-device-code: the host reads an element of type "
             << element << " from step memory; the CUDA runtime reads f32, "
             << "f64, i32 and i64";
    OpBuilder b(load);
    Location loc = load.getLoc();
    auto index = b.getIndexType();
    func::FuncOp callee = ga::train::getOrInsertRuntimeFunction(
        b, load, name, b.getFunctionType({index, index}, {element}));
    if (!callee)
      return failure();
    Value memref = load.getMemRef();
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value linear = metadata.getOffset();
    for (auto [i, stride] :
         llvm::zip(load.getIndices(), metadata.getStrides())) {
      Value term = arith::MulIOp::create(b, loc, i, stride);
      linear = arith::AddIOp::create(b, loc, linear, term);
    }
    Value pointer =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    auto call =
        func::CallOp::create(b, loc, callee, ValueRange{pointer, linear});
    load.replaceAllUsesWith(call.getResult(0));
    load.erase();
    return success();
  }

  void sinkGlobals(gpu::LaunchOp launch) {
    SetVector<Value> above;
    getUsedValuesDefinedAbove(launch.getBody(), above);
    OpBuilder b(launch.getContext());
    b.setInsertionPointToStart(&launch.getBody().front());
    for (Value value : above) {
      auto global = value.getDefiningOp<memref::GetGlobalOp>();
      if (!global)
        continue;
      Operation *clone = b.clone(*global);
      replaceAllUsesInRegionWith(value, clone->getResult(0), launch.getBody());
    }
  }
};

} // namespace
