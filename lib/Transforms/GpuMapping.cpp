//===- GpuMapping.cpp - A bufferized step, mapped to GPU kernels ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The passes of the CUDA pipeline that place a bufferized step on the GPU:
//
// - ga-gpu-map-parallel-loops: every linalg operation and memref.copy of the
//   host code becomes a parallel loop nest (reductions as sequential loops
//   inside), tiled so that the innermost parallel dimension runs on
//   threadIdx.x of blocks of `block-size` threads (coalesced accesses) and
//   the next dimensions on the grid, with the gpu.loop_dim_map attributes
//   that convert-parallel-loops-to-gpu reads.
// - ga-gpu-device-code: after convert-parallel-loops-to-gpu, whatever host
//   code is left touching step memory goes to the device too: loop nests
//   without a parallel dimension (full reductions: the loss sum, the token
//   count) and stores run in single-thread kernels, scalars that host code
//   reads (the label check's first invalid position) are copied back through
//   the runtime (ga_cuda_read_*), and the constants that kernels read are
//   referenced from inside the kernels so that outlining copies them to the
//   device module. Calls that would hand step memory to host functions (the
//   CPU collectives) are refused.
// - ga-gpu-device-allocations: on the LLVM dialect, the step's buffers are
//   allocated by the CUDA runtime (ga_cuda_alloc and ga_cuda_free, device
//   memory with a caching allocator) instead of MLIR's generic host
//   allocation functions.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUMAPPARALLELLOOPSPASS
#define GEN_PASS_DEF_GAGPUDEVICECODEPASS
#define GEN_PASS_DEF_GAGPUDEVICEALLOCATIONSPASS
#define GEN_PASS_DEF_GAGPUEMULATEONHOSTPASS
#define GEN_PASS_DEF_GAGPUGEMMTOBLASPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

bool insideKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

/// A gpu.launch of one thread before `op`; returns its terminator.
Operation *createSingleThreadLaunch(OpBuilder &b, Operation *op) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  b.setInsertionPointToEnd(&launch.getBody().front());
  return gpu::TerminatorOp::create(b, loc);
}

/// The constant trip count of dimension `d` of `loop`, if it has one.
std::optional<int64_t> tripCount(scf::ParallelOp loop, unsigned d) {
  auto lb = getConstantIntValue(loop.getLowerBound()[d]);
  auto ub = getConstantIntValue(loop.getUpperBound()[d]);
  auto step = getConstantIntValue(loop.getStep()[d]);
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return (*ub - *lb + *step - 1) / *step;
}

struct GaGpuMapParallelLoopsPass
    : ga::impl::GaGpuMapParallelLoopsPassBase<GaGpuMapParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    Operation *root = getOperation();
    MLIRContext *ctx = &getContext();
    if (blockSize < 1 || blockSize > 1024) {
      root->emitError() << "ga-gpu-map-parallel-loops: block-size must be in "
                           "[1, 1024] (CUDA's threads per block), got "
                        << blockSize;
      return signalPassFailure();
    }
    IRRewriter rewriter(ctx);

    // Copies become linalg copies, and every linalg operation of the host
    // code a parallel loop nest.
    SmallVector<memref::CopyOp> copies;
    root->walk([&](memref::CopyOp copy) {
      if (!insideKernel(copy))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      linalg::CopyOp::create(rewriter, copy.getLoc(),
                             ValueRange{copy.getSource()},
                             ValueRange{copy.getTarget()});
      rewriter.eraseOp(copy);
    }
    SmallVector<linalg::LinalgOp> linalgOps;
    root->walk([&](linalg::LinalgOp op) {
      if (!insideKernel(op))
        linalgOps.push_back(op);
    });
    for (linalg::LinalgOp op : linalgOps) {
      if (!op.hasPureBufferSemantics()) {
        op->emitError() << "ga-gpu-map-parallel-loops: expects bufferized "
                           "linalg operations (run after bufferization)";
        return signalPassFailure();
      }
      // Parallel dimensions first, so that a reduction over an outer
      // dimension (a bias gradient: the sum over rows) is one kernel whose
      // threads each sum their column, not one kernel per row. Each output
      // element is still summed in the same order.
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
        SmallVector<unsigned> order;
        for (auto [d, type] : llvm::enumerate(generic.getIteratorTypesArray()))
          if (type == utils::IteratorType::parallel)
            order.push_back(d);
        for (auto [d, type] : llvm::enumerate(generic.getIteratorTypesArray()))
          if (type != utils::IteratorType::parallel)
            order.push_back(d);
        if (!llvm::equal(order, llvm::seq<unsigned>(0, order.size()))) {
          rewriter.setInsertionPoint(generic);
          FailureOr<linalg::GenericOp> swapped =
              linalg::interchangeGenericOp(rewriter, generic, order);
          if (succeeded(swapped))
            op = cast<linalg::LinalgOp>(swapped->getOperation());
        }
      }
      rewriter.setInsertionPoint(op);
      // Without loops (a 0-d fill or reduction step), the scalar code runs
      // in one thread.
      if (op.getNumLoops() == 0)
        rewriter.setInsertionPoint(createSingleThreadLaunch(rewriter, op));
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op->emitError() << "ga-gpu-map-parallel-loops: cannot lower this "
                           "operation to parallel loops";
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }

    // Tile and map the outermost parallel loops that are not mapped yet.
    SmallVector<scf::ParallelOp> loops;
    root->walk([&](scf::ParallelOp loop) {
      // Loops with reductions (results) have no mapping to threads without
      // atomics; they stay, and ga-gpu-device-code refuses them.
      if (!insideKernel(loop) && !loop->getParentOfType<scf::ParallelOp>() &&
          !loop->hasAttr(gpu::getMappingAttrName()) && loop.getNumLoops() > 0 &&
          loop.getNumResults() == 0)
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      mapLoop(loop);
  }

  void mapLoop(scf::ParallelOp loop) {
    MLIRContext *ctx = loop.getContext();
    unsigned n = loop.getNumLoops();
    SmallVector<int64_t> tile(n, 1);
    SmallVector<std::optional<int64_t>> counts;
    for (unsigned d = 0; d < n; ++d)
      counts.push_back(tripCount(loop, d));
    // A block covers the innermost dimension, rounded to whole warps.
    int64_t inner = blockSize;
    if (std::optional<int64_t> count = counts[n - 1])
      inner = std::min<int64_t>(blockSize, ((*count + 31) / 32) * 32);
    tile[n - 1] = std::max<int64_t>(inner, 1);
    auto [outer, within] = scf::tileParallelLoop(loop, tile,
                                                 /*noMinMaxBounds=*/true);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
    auto dim = [&](gpu::Processor p) {
      return gpu::ParallelLoopDimMappingAttr::get(ctx, p, identity, identity);
    };
    // Grid: innermost dimension on x (up to 2^31 - 1 blocks), the next two
    // on y and z (up to 65535 each), the rest sequential in each thread.
    SmallVector<gpu::ParallelLoopDimMappingAttr> outerMap(
        n, dim(gpu::Processor::Sequential));
    gpu::Processor grid[] = {gpu::Processor::BlockX, gpu::Processor::BlockY,
                             gpu::Processor::BlockZ};
    for (unsigned k = 0; k < std::min(n, 3u); ++k) {
      unsigned d = n - 1 - k;
      // The tile loop's trip count (its step is not folded yet).
      std::optional<int64_t> count;
      if (counts[d])
        count = (*counts[d] + tile[d] - 1) / tile[d];
      int64_t limit = k == 0 ? (int64_t(1) << 31) - 1 : 65535;
      if (count && *count <= limit)
        outerMap[d] = dim(grid[k]);
    }
    SmallVector<gpu::ParallelLoopDimMappingAttr> innerMap(
        n, dim(gpu::Processor::Sequential));
    innerMap[n - 1] = dim(gpu::Processor::ThreadX);
    (void)gpu::setMappingAttr(outer, outerMap);
    (void)gpu::setMappingAttr(within, innerMap);
  }
};

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
      if (callee.starts_with("ga_all_reduce_")) {
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
      if (func.isExternal() &&
          func.getSymName().starts_with("ga_all_reduce_") &&
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

  /// The buffer a view is of (through views and casts).
  static Value rootOf(Value value) {
    while (Operation *def = value.getDefiningOp()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(def))
        value = view.getViewSource();
      else if (auto cast = dyn_cast<memref::CastOp>(def))
        value = cast.getSource();
      else
        break;
    }
    return value;
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
        Value root = rootOf(store.getMemRef());
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
      Value root = rootOf(load.getMemRef());
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
    ModuleOp module = getOperation();
    OpBuilder b(load);
    Location loc = load.getLoc();
    auto index = b.getIndexType();
    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      callee = func::FuncOp::create(
          b, loc, name, b.getFunctionType({index, index}, {element}));
      callee.setPrivate();
    }
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

/// Whether `map` (over m, n, k = d0, d1, d2) is (d<a>, d<b>).
bool isPair(AffineMap map, unsigned a, unsigned b) {
  return map.getNumResults() == 2 && map.getNumDims() == 3 &&
         map.getResult(0) == getAffineDimExpr(a, map.getContext()) &&
         map.getResult(1) == getAffineDimExpr(b, map.getContext());
}

/// f32 matrices whose rows are contiguous (stride 1 along the second
/// dimension), the layout cuBLAS reads with a leading dimension.
bool rowMajor(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || type.getRank() != 2 || !type.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return strides[1] == 1 && !ShapedType::isDynamic(strides[0]);
}

struct GaGpuGemmToBlasPass
    : ga::impl::GaGpuGemmToBlasPassBase<GaGpuGemmToBlasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::MatmulOp> matmuls;
    module.walk([&](linalg::MatmulOp op) {
      if (!insideKernel(op) && op.hasPureBufferSemantics())
        matmuls.push_back(op);
    });
    for (linalg::MatmulOp op : matmuls) {
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      Value a = op.getDpsInputOperand(0)->get();
      Value b = op.getDpsInputOperand(1)->get();
      Value c = op.getDpsInitOperand(0)->get();
      bool transA = isPair(maps[0], 2, 0), transB = isPair(maps[1], 1, 2);
      if (!(transA || isPair(maps[0], 0, 2)) ||
          !(transB || isPair(maps[1], 2, 1)) || !isPair(maps[2], 0, 1) ||
          !rowMajor(a) || !rowMajor(b) || !rowMajor(c) || op.hasDynamicShape())
        continue; // Another form: it stays a kernel.
      replace(op, a, b, c, transA, transB);
    }
  }

  /// `C += op(A) op(B)` (row-major) becomes ga_cuda_gemm_f32(transA,
  /// transB, m, n, k, A, offset, lda, B, offset, ldb, C, offset, ldc) with
  /// aligned pointers and offsets in elements.
  void replace(linalg::MatmulOp op, Value a, Value b, Value c, bool transA,
               bool transB) {
    ModuleOp module = getOperation();
    OpBuilder builder(op);
    Location loc = op.getLoc();
    Type index = builder.getIndexType();
    StringRef name = allowTF32 ? "ga_cuda_gemm_f32_tf32" : "ga_cuda_gemm_f32";
    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(module.getBody());
      SmallVector<Type> args(2, builder.getI32Type());
      args.append(12, index);
      callee = func::FuncOp::create(builder, loc, name,
                                    builder.getFunctionType(args, {}));
      callee.setPrivate();
    }
    auto cType = cast<MemRefType>(c.getType());
    auto aType = cast<MemRefType>(a.getType());
    int64_t m = cType.getDimSize(0), n = cType.getDimSize(1);
    int64_t k = transA ? aType.getDimSize(0) : aType.getDimSize(1);
    auto constant = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(builder, loc, v);
    };
    SmallVector<Value> operands = {
        arith::ConstantIntOp::create(builder, loc, transA, 32),
        arith::ConstantIntOp::create(builder, loc, transB, 32), constant(m),
        constant(n), constant(k)};
    for (Value matrix : {a, b, c}) {
      auto metadata =
          memref::ExtractStridedMetadataOp::create(builder, loc, matrix);
      operands.push_back(
          memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, matrix));
      operands.push_back(metadata.getOffset());
      operands.push_back(metadata.getStrides()[0]);
    }
    func::CallOp::create(builder, loc, callee, operands);
    op.erase();
  }
};

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
