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
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "train/TrainRuntime.h"
#include <algorithm>
#include <limits>

namespace ga {
#define GEN_PASS_DEF_GAGPUMAPPARALLELLOOPSPASS
#define GEN_PASS_DEF_GAGPUDEVICECODEPASS
#define GEN_PASS_DEF_GAGPUDEVICEALLOCATIONSPASS
#define GEN_PASS_DEF_GAGPUEMULATEONHOSTPASS
#define GEN_PASS_DEF_GAGPUGEMMTOBLASPASS
#define GEN_PASS_DEF_GAGPUSPLITREDUCTIONSPASS
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

/// Whether `buffer` is a view of a memref.alloc: a buffer of the device
/// allocator, whose blocks are 256-byte aligned (a step's arguments, which
/// a caller may pass at any offset, are not).
bool viewOfAllocation(Value buffer) {
  while (Operation *def = buffer.getDefiningOp()) {
    if (isa<memref::AllocOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    buffer = view.getViewSource();
  }
  return false;
}

/// Whether `map`, over `n` loops, reads the innermost loop as its
/// innermost result.
bool readsInnermost(AffineMap map, unsigned n) {
  return map.getNumResults() > 0 &&
         map.getResults().back() == getAffineDimExpr(n - 1, map.getContext());
}

/// `op`, an elementwise linalg.generic on buffers, as a parallel loop nest
/// in which each iteration handles `width` consecutive elements of the
/// innermost dimension with vector loads and stores aligned to their size
/// (128-bit accesses for 4 floats) and the body's operations on vectors,
/// each element computed as the scalar loop computes it. Operands that do
/// not read the innermost dimension are loaded once and broadcast. Fails,
/// changing nothing, unless every loop is parallel, the innermost extent is
/// at least a warp of `width`-element groups, each operand that reads that
/// dimension has it innermost and contiguous, 32-bit elements, and an
/// aligned place in a buffer of the device allocator (static strides and
/// offset, multiples of `width`), and the body holds only elementwise
/// operations and constants.
LogicalResult vectorizeElementwise(RewriterBase &rewriter, linalg::GenericOp op,
                                   int64_t width) {
  unsigned n = op.getNumLoops();
  if (width < 2 || n == 0 || op.getNumParallelLoops() != n ||
      op.getNumDpsInits() == 0)
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      ranges[n - 1] % width != 0 || ranges[n - 1] / width < 32)
    return failure();
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!type || !map.isProjectedPermutation())
      return failure();
    if (!readsInnermost(map, n)) {
      // Read once per group and broadcast; an init must be written whole.
      if (op.isDpsInit(&operand) ||
          llvm::any_of(map.getResults(),
                       [&](AffineExpr e) { return e.isFunctionOfDim(n - 1); }))
        return failure();
      continue;
    }
    SmallVector<int64_t> strides;
    int64_t offset;
    if (type.getElementTypeBitWidth() != 32 ||
        failed(type.getStridesAndOffset(strides, offset)) ||
        ShapedType::isDynamic(offset) || offset % width != 0 ||
        strides.back() != 1 || !viewOfAllocation(operand.get()))
      return failure();
    for (int64_t stride : ArrayRef<int64_t>(strides).drop_back())
      if (ShapedType::isDynamic(stride) || stride % width != 0)
        return failure();
  }
  Block *body = op.getBlock();
  for (Operation &nested : body->without_terminator()) {
    bool constant = isa<arith::ConstantOp>(nested);
    if (nested.getNumRegions() != 0 ||
        (!constant && !nested.hasTrait<OpTrait::Elementwise>()) ||
        llvm::any_of(nested.getResultTypes(),
                     [](Type t) { return !t.isIntOrFloat(); }))
      return failure();
  }

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  SmallVector<Value> lbs(n, constant(0)), steps(n, constant(1)), ubs;
  for (unsigned d = 0; d < n; ++d)
    ubs.push_back(constant(d + 1 == n ? ranges[d] / width : ranges[d]));
  unsigned bytes = 4 * static_cast<unsigned>(width);
  scf::ParallelOp::create(
      rewriter, loc, lbs, ubs, steps,
      [&](OpBuilder &b, Location l, ValueRange ivs) {
        SmallVector<Value> index(ivs.begin(), ivs.end());
        index.back() = arith::MulIOp::create(
            b, l, ivs.back(), arith::ConstantIndexOp::create(b, l, width));
        auto indicesOf = [&](OpOperand &operand) {
          SmallVector<Value> indices;
          for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults())
            indices.push_back(index[cast<AffineDimExpr>(e).getPosition()]);
          return indices;
        };
        auto vectorOf = [&](Type t) { return VectorType::get({width}, t); };
        IRMapping map;
        DenseMap<Value, Value> broadcasts;
        auto broadcast = [&](Value scalar) {
          Value &v = broadcasts[scalar];
          if (!v)
            v = vector::BroadcastOp::create(b, l, vectorOf(scalar.getType()),
                                            scalar);
          return v;
        };
        for (OpOperand &operand : op->getOpOperands()) {
          BlockArgument arg = body->getArgument(operand.getOperandNumber());
          if (arg.use_empty())
            continue;
          Type element = arg.getType();
          if (readsInnermost(op.getMatchingIndexingMap(&operand), n))
            map.map(arg, vector::LoadOp::create(
                             b, l, vectorOf(element), operand.get(),
                             indicesOf(operand), /*nontemporal=*/false,
                             llvm::MaybeAlign(bytes)));
          else
            map.map(arg, broadcast(memref::LoadOp::create(b, l, operand.get(),
                                                          indicesOf(operand))));
        }
        for (Operation &nested : body->without_terminator()) {
          if (isa<arith::ConstantOp>(nested)) {
            map.map(nested.getResult(0),
                    broadcast(b.clone(nested)->getResult(0)));
            continue;
          }
          SmallVector<Value> operands;
          for (Value v : nested.getOperands())
            operands.push_back(map.contains(v) ? map.lookup(v) : broadcast(v));
          OperationState state(l, nested.getName());
          state.addOperands(operands);
          state.addAttributes(nested.getAttrs());
          for (Type t : nested.getResultTypes())
            state.addTypes(vectorOf(t));
          Operation *vectorized = b.create(state);
          map.map(nested.getResults(), vectorized->getResults());
        }
        Operation *yield = body->getTerminator();
        for (OpOperand &init : op.getDpsInitsMutable()) {
          Value v =
              yield->getOperand(init.getOperandNumber() - op.getNumDpsInputs());
          Value stored = map.contains(v) ? map.lookup(v) : broadcast(v);
          vector::StoreOp::create(b, l, stored, init.get(), indicesOf(init),
                                  /*nontemporal=*/false,
                                  llvm::MaybeAlign(bytes));
        }
      });
  return success();
}

struct GaGpuMapParallelLoopsPass
    : ga::impl::GaGpuMapParallelLoopsPassBase<GaGpuMapParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    Operation *root = getOperation();
    MLIRContext *ctx = &getContext();
    if (vectorWidth != 1 && vectorWidth != 2 && vectorWidth != 4) {
      root->emitError() << "ga-gpu-map-parallel-loops: vector-width must be "
                           "1, 2 or 4, got "
                        << static_cast<int64_t>(vectorWidth);
      return signalPassFailure();
    }
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
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (generic &&
          succeeded(vectorizeElementwise(rewriter, generic, vectorWidth))) {
        rewriter.eraseOp(op);
        continue;
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
    // Short rows: the block takes as many of them as fit (a power of two,
    // no more than there are), on threadIdx.y. Blocks of one warp would
    // leave most of each multiprocessor's threads idle.
    if (n >= 2 && counts[n - 2]) {
      int64_t rows = 1;
      while (rows * 2 * tile[n - 1] <= blockSize && rows * 2 <= *counts[n - 2])
        rows *= 2;
      tile[n - 2] = rows;
    }
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
    if (n >= 2 && tile[n - 2] > 1)
      innerMap[n - 2] = dim(gpu::Processor::ThreadY);
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

/// A contraction `C[batch, m, n] += A[batch, m, k] B[batch, k, n]` (any
/// layout, any order of the loops) as cuBLAS sees it: row-major matrices
/// given by a leading dimension and a transposition each, one batch
/// dimension run as a strided batch, the others as host loops.
struct BlasForm {
  unsigned m, n, k;            // the loop dimensions
  OpOperand *a, *b, *c;        // op(A) is m x k, op(B) is k x n, C is m x n
  bool transA, transB;         // A stored k x m, B stored n x k
  int64_t lda, ldb, ldc;       // leading dimensions, in elements
  SmallVector<unsigned> batch; // batch loop dimensions, strided one last
  // Stride of each loop dimension in each matrix (0 where it is absent).
  SmallVector<int64_t> strideA, strideB, strideC;
  SmallVector<int64_t> bounds; // static loop bounds
  // The body's product of the two elements x (A's) and y (B's) and a
  // scale `alpha` defined outside: x * y (order 0, no alpha), (x * y) *
  // alpha (1), (x * alpha) * y (2), (y * alpha) * x (3). cuBLAS scales
  // the sum by alpha; the CPU emulation multiplies in this order.
  Value alpha;
  int order = 0;
};

/// Whether `value` is `mulf(p, q)` or `mulf(q, p)` (no fast-math flags).
bool isProduct(Value value, Value p, Value q) {
  auto mul = value.getDefiningOp<arith::MulFOp>();
  if (!mul || mul.getFastmath() != arith::FastMathFlags::none)
    return false;
  return (mul.getLhs() == p && mul.getRhs() == q) ||
         (mul.getLhs() == q && mul.getRhs() == p);
}

/// The body `yield acc + P(x, y)` of a multiply-accumulate, with P one of
/// the products of BlasForm::order: sets `alpha` and `order` of `f`.
bool matchBody(linalg::LinalgOp op, BlasForm &f) {
  Block *body = op.getBlock();
  if (!body || body->getNumArguments() != 3 ||
      !llvm::hasSingleElement(body->getTerminator()->getOperands()))
    return false;
  Value x = body->getArgument(0), y = body->getArgument(1),
        acc = body->getArgument(2);
  auto add =
      body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add.getFastmath() != arith::FastMathFlags::none)
    return false;
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  if (product == acc || (add.getLhs() != acc && add.getRhs() != acc))
    return false;
  // Every operation of the body is the add, the products or the yield.
  if (std::distance(body->begin(), body->end()) > 4)
    return false;
  if (isProduct(product, x, y)) {
    f.order = 0;
    return std::distance(body->begin(), body->end()) == 3;
  }
  auto outer = product.getDefiningOp<arith::MulFOp>();
  if (!outer || outer.getFastmath() != arith::FastMathFlags::none)
    return false;
  auto outside = [&](Value v) {
    return v.getType().isF32() &&
           !op->isAncestor(v.getParentRegion()->getParentOp());
  };
  for (auto [inner, other] : {std::make_pair(outer.getLhs(), outer.getRhs()),
                              std::make_pair(outer.getRhs(), outer.getLhs())}) {
    if (isProduct(inner, x, y) && outside(other)) {
      f.alpha = other;
      f.order = 1;
      return true;
    }
    auto mul = inner.getDefiningOp<arith::MulFOp>();
    if (!mul || mul.getFastmath() != arith::FastMathFlags::none)
      continue;
    for (auto [first, second] : {std::make_pair(mul.getLhs(), mul.getRhs()),
                                 std::make_pair(mul.getRhs(), mul.getLhs())}) {
      if (!outside(second))
        continue;
      if (first == x && other == y) {
        f.alpha = second;
        f.order = 2;
        return true;
      }
      if (first == y && other == x) {
        f.alpha = second;
        f.order = 3;
        return true;
      }
    }
  }
  return false;
}

/// The stride of every loop dimension in `operand`'s buffer (0 for
/// dimensions it does not use), or failure when its map is not a projected
/// permutation of static strides over f32.
FailureOr<SmallVector<int64_t>> loopStrides(linalg::LinalgOp op,
                                            OpOperand *operand) {
  auto type = dyn_cast<MemRefType>(operand->get().getType());
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
    return failure();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return failure();
  AffineMap map = op.getMatchingIndexingMap(operand);
  SmallVector<int64_t> result(op.getNumLoops(), 0);
  for (auto [r, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || result[dim.getPosition()] != 0)
      return failure();
    // A unit dimension's stride is irrelevant; 0 keeps batch strides exact.
    result[dim.getPosition()] = type.getDimSize(r) == 1 ? 0 : strides[r];
  }
  return result;
}

/// The leading dimension of a row-major rows x cols matrix whose rows are
/// `rowStride` apart and whose columns are `colStride` apart, or 0 when
/// cuBLAS cannot read it so (columns not contiguous, or rows overlapping).
int64_t leadingDimension(int64_t rows, int64_t cols, int64_t rowStride,
                         int64_t colStride) {
  if (cols > 1 && colStride != 1)
    return 0;
  if (rows <= 1)
    return std::max<int64_t>(cols, 1);
  return rowStride >= cols ? rowStride : 0;
}

/// How cuBLAS reads op(X), a rows x cols matrix whose rows and columns are
/// `rowStride` and `colStride` elements apart: as stored (false) or
/// transposed (true), with its leading dimension `ld`; failure when neither
/// dimension is contiguous.
FailureOr<bool> orient(int64_t rows, int64_t cols, int64_t rowStride,
                       int64_t colStride, int64_t &ld) {
  if ((ld = leadingDimension(rows, cols, rowStride, colStride)))
    return false;
  if ((ld = leadingDimension(cols, rows, colStride, rowStride)))
    return true;
  return failure();
}

/// The cuBLAS form of `op`, if it has one: an f32 multiply-accumulate
/// contraction with one m, one n and one k dimension, static shapes and
/// strides, each matrix with a contiguous dimension.
std::optional<BlasForm> matchBlas(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  BlasForm f;
  if (!matchBody(op, f))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op.getIndexingMapsArray());
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return std::nullopt;
  // k reduces; every other loop is parallel.
  for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if ((type == utils::IteratorType::reduction) != (i == dims->k[0]))
      return std::nullopt;
  f.bounds = op.getStaticLoopRanges();
  if (llvm::any_of(f.bounds, ShapedType::isDynamic))
    return std::nullopt;
  f.m = dims->m[0];
  f.n = dims->n[0];
  f.k = dims->k[0];
  f.a = op.getDpsInputOperand(0);
  f.b = op.getDpsInputOperand(1);
  f.c = op.getDpsInitOperand(0);
  FailureOr<SmallVector<int64_t>> sa = loopStrides(op, f.a),
                                  sb = loopStrides(op, f.b),
                                  sc = loopStrides(op, f.c);
  if (failed(sa) || failed(sb) || failed(sc))
    return std::nullopt;
  f.strideA = *sa;
  f.strideB = *sb;
  f.strideC = *sc;
  // C with contiguous columns of m rather than rows of n: compute C^T =
  // op(B)^T op(A)^T instead, that is, exchange the roles of m and n.
  if (f.bounds[f.n] > 1 && f.strideC[f.n] != 1 && f.strideC[f.m] == 1) {
    std::swap(f.m, f.n);
    std::swap(f.a, f.b);
    std::swap(f.strideA, f.strideB);
    if (f.order >= 2)
      f.order = 5 - f.order; // x and y exchange
  }
  int64_t m = f.bounds[f.m], n = f.bounds[f.n], k = f.bounds[f.k];
  f.ldc = leadingDimension(m, n, f.strideC[f.m], f.strideC[f.n]);
  if (!f.ldc)
    return std::nullopt;
  FailureOr<bool> transA = orient(m, k, f.strideA[f.m], f.strideA[f.k], f.lda);
  FailureOr<bool> transB = orient(k, n, f.strideB[f.k], f.strideB[f.n], f.ldb);
  if (failed(transA) || failed(transB))
    return std::nullopt;
  f.transA = *transA;
  f.transB = *transB;
  f.batch.assign(dims->batch.begin(), dims->batch.end());
  // The batch dimension with the most iterations runs as cuBLAS's strided
  // batch; it goes last.
  if (!f.batch.empty()) {
    auto widest = llvm::max_element(f.batch, [&](unsigned x, unsigned y) {
      return f.bounds[x] < f.bounds[y];
    });
    std::rotate(widest, widest + 1, f.batch.end());
  }
  // cuBLAS takes int sizes, leading dimensions and batch strides.
  auto fits = [](int64_t v) {
    return v <= std::numeric_limits<int32_t>::max();
  };
  if (!fits(m) || !fits(n) || !fits(k) || !fits(f.lda) || !fits(f.ldb) ||
      !fits(f.ldc) || (!f.batch.empty() && !fits(f.bounds[f.batch.back()])))
    return std::nullopt;
  return f;
}

/// The zero fill of the product `op`'s C if the product starts from it: C
/// is a whole fresh buffer that nothing but that fill (of +0) touches
/// before `op`, in `op`'s block. The product then writes C without reading
/// it, and the fill goes.
linalg::FillOp zeroInit(linalg::LinalgOp op, const BlasForm &f) {
  Value c = f.c->get();
  if (!c.getDefiningOp<memref::AllocOp>())
    return {};
  linalg::FillOp init;
  for (Operation *user : c.getUsers()) {
    if (user == op.getOperation())
      continue;
    if (user->getBlock() != op->getBlock())
      return {};
    if (op->isBeforeInBlock(user))
      continue;
    auto fill = dyn_cast<linalg::FillOp>(user);
    if (init || !fill || fill.getOutputs()[0] != c ||
        !matchPattern(fill.getInputs()[0], m_PosZeroFloat()))
      return {};
    init = fill;
  }
  return init;
}

/// A bias addition that only reads a product from zero (see
/// ga-gpu-gemm-to-blas bias-epilogue): `fill` zeroes the product's C, a
/// fresh row-major buffer, and `add` writes `D[i, j] = C[i, j] + bias[j]`
/// into another fresh buffer.
struct BiasEpilogue {
  linalg::FillOp fill;
  linalg::GenericOp add;
  Value bias, d;
  int64_t ldd = 0;
};

/// Whether the body of `add` is `yield x + y` of its two inputs (either
/// order, no fast-math flags), not reading its init.
bool isSumOfInputs(linalg::GenericOp add) {
  Block *body = add.getBlock();
  if (body->getNumArguments() != 3 || !body->getArgument(2).use_empty() ||
      std::distance(body->begin(), body->end()) != 2)
    return false;
  auto sum =
      body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!sum || sum.getFastmath() != arith::FastMathFlags::none)
    return false;
  Value x = body->getArgument(0), y = body->getArgument(1);
  return (sum.getLhs() == x && sum.getRhs() == y) ||
         (sum.getLhs() == y && sum.getRhs() == x);
}

/// The bias epilogue of the product `op` (form `f`), if it has one.
std::optional<BiasEpilogue> matchBiasEpilogue(linalg::LinalgOp op,
                                              const BlasForm &f) {
  if (!f.batch.empty() || f.alpha)
    return std::nullopt;
  Value c = f.c->get();
  auto cType = cast<MemRefType>(c.getType());
  int64_t m = f.bounds[f.m], n = f.bounds[f.n];
  if (!c.getDefiningOp<memref::AllocOp>() || cType.getRank() != 2 ||
      !cType.getLayout().isIdentity() || !cType.getElementType().isF32() ||
      cType.getShape() != ArrayRef<int64_t>{m, n} || f.strideC[f.n] != 1)
    return std::nullopt;
  // A product from zero whose C is then read by the addition alone
  // (zeroInit keeps every user in the product's block).
  BiasEpilogue e;
  e.fill = zeroInit(op, f);
  if (!e.fill)
    return std::nullopt;
  for (Operation *user : c.getUsers()) {
    if (user == op.getOperation() || user == e.fill.getOperation() ||
        isa<memref::DeallocOp>(user))
      continue;
    auto add = dyn_cast<linalg::GenericOp>(user);
    if (!add || e.add)
      return std::nullopt;
    e.add = add;
  }
  if (!e.add)
    return std::nullopt;
  linalg::GenericOp add = e.add;
  if (!add.hasPureBufferSemantics() || add.getNumDpsInputs() != 2 ||
      add.getNumDpsInits() != 1 || add.getNumLoops() != 2 ||
      add.getNumReductionLoops() != 0 || !isSumOfInputs(add))
    return std::nullopt;
  unsigned ci = add.getDpsInputs()[0] == c ? 0 : 1;
  if (add.getDpsInputs()[ci] != c || add.getDpsInputs()[1 - ci] == c)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap column = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
  SmallVector<AffineMap> maps = add.getIndexingMapsArray();
  if (maps[ci] != identity || maps[1 - ci] != column || maps[2] != identity)
    return std::nullopt;
  // The bias: n contiguous floats.
  e.bias = add.getDpsInputs()[1 - ci];
  auto biasType = cast<MemRefType>(e.bias.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (biasType.getRank() != 1 || !biasType.getElementType().isF32() ||
      biasType.getDimSize(0) != n ||
      failed(biasType.getStridesAndOffset(strides, offset)) || strides[0] != 1)
    return std::nullopt;
  // D: a fresh buffer (it cannot alias A or B), row-major.
  e.d = add.getDpsInits()[0];
  auto dType = cast<MemRefType>(e.d.getType());
  strides.clear();
  if (!e.d.getDefiningOp<memref::AllocOp>() ||
      !dType.getElementType().isF32() || dType.getShape() != cType.getShape() ||
      failed(dType.getStridesAndOffset(strides, offset)) || strides[1] != 1 ||
      ShapedType::isDynamic(strides[0]) || strides[0] < n ||
      strides[0] > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  e.ldd = strides[0];
  // The product moves to the addition: nothing between them may write or
  // free memory (A and B must still hold what the product read).
  for (Operation *it = op->getNextNode(); it != add.getOperation();
       it = it->getNextNode())
    if (!isa<memref::AllocOp>(it) && !isMemoryEffectFree(it))
      return std::nullopt;
  return e;
}

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

  /// The runtime function's suffix for the pass's precision.
  StringRef precisionSuffix() const {
    return allowTF32 ? "_tf32" : allowBF16 ? "_bf16" : "";
  }

  /// `ga_cuda_gemm_bias_f32(transA, transB, m, n, k, A, offset, lda, B,
  /// offset, ldb, bias, offset, D, offset, ldd)` where the addition was;
  /// the fill, the product, the addition and C go.
  void replaceWithBias(linalg::LinalgOp op, const BlasForm &f,
                       const BiasEpilogue &e) {
    OpBuilder builder(e.add);
    Location loc = op.getLoc();
    std::string name = ("ga_cuda_gemm_bias_f32" + precisionSuffix()).str();
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
    func::CallOp::create(builder, loc, callee, operands);
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
    ModuleOp module = getOperation();
    if (auto callee = module.lookupSymbol<func::FuncOp>(name))
      return callee;
    OpBuilder builder(module.getBodyRegion());
    auto callee = func::FuncOp::create(builder, loc, name,
                                       builder.getFunctionType(args, {}));
    callee.setPrivate();
    return callee;
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
         precisionSuffix())
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

struct GaGpuSplitReductionsPass
    : ga::impl::GaGpuSplitReductionsPassBase<GaGpuSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minThreads < 2 || minChunk < 1) {
      getOperation().emitError()
          << "ga-gpu-split-reductions: min-threads must be at least 2 and "
             "min-chunk at least 1, got "
          << static_cast<int64_t>(minThreads) << " and "
          << static_cast<int64_t>(minChunk);
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
          op.getNumReductionLoops() == 1)
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : candidates) {
      // Lanes where they give at least as many threads as chunks would
      // (their reads are coalesced, the chunks' are not); chunks where
      // they give more (a full reduction: lanes alone would be one warp).
      std::optional<linalg::SplitReductionOptions> split;
      int64_t chunks = chunksOf(op);
      if (isLaneSplittable(op) && lanes >= chunks)
        // The lane dimension innermost in the partial results and in the
        // parallel loops (the loops are the rows, the steps along the row,
        // then the lanes), so that it runs on threadIdx.x.
        split = linalg::SplitReductionOptions{
            lanes, static_cast<unsigned>(op.getNumParallelLoops()),
            /*innerParallel=*/true};
      else if (chunks >= 2)
        // The chunk dimension outermost in the partial results.
        split = linalg::SplitReductionOptions{chunks, 0,
                                              /*innerParallel=*/false};
      if (!split)
        continue;
      rewriter.setInsertionPoint(op);
      // splitReduction refuses what it cannot split (no recognized
      // combiner, a reduction dimension an operand does not index plainly);
      // such reductions stay as they are.
      (void)linalg::splitReduction(rewriter, op,
                                   [&](linalg::LinalgOp) { return *split; });
    }
  }

  /// Whether `op` is a row reduction that `lanes` interleaved partial
  /// reductions per row may share: its one reduction dimension is the last
  /// loop, of static length at least min-length and a multiple of `lanes`,
  /// the innermost result of every input that reads it (contiguous in a
  /// row-major buffer) and read nowhere else; the output is indexed by the
  /// parallel loops in order, so that the lanes' partial results are rows
  /// of their own.
  bool isLaneSplittable(linalg::GenericOp op) {
    SmallVector<int64_t> bounds = op.getStaticLoopRanges();
    if (lanes < 2 || llvm::any_of(bounds, ShapedType::isDynamic))
      return false;
    unsigned numLoops = op.getNumLoops();
    unsigned last = numLoops - 1;
    if (op.getIteratorTypesArray()[last] != utils::IteratorType::reduction)
      return false;
    int64_t length = bounds[last];
    if (length < minLength || length < lanes || length % lanes != 0)
      return false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      for (auto [i, expr] : llvm::enumerate(map.getResults())) {
        auto d = dyn_cast<AffineDimExpr>(expr);
        bool readsRow = expr.isFunctionOfDim(last);
        if (readsRow && (!d || i + 1 != map.getNumResults()))
          return false;
      }
    }
    AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    return out == AffineMap::getMultiDimIdentityMap(numLoops, op.getContext())
                      .getMajorSubMap(last);
  }

  /// The number of chunks to split `op`'s reduction in, or 1.
  int64_t chunksOf(linalg::GenericOp op) {
    SmallVector<int64_t> bounds = op.getStaticLoopRanges();
    if (llvm::any_of(bounds, ShapedType::isDynamic))
      return 1;
    SmallVector<unsigned> reductions;
    op.getReductionDims(reductions);
    int64_t total = bounds[reductions[0]];
    int64_t results = 1;
    for (auto [i, bound] : llvm::enumerate(bounds))
      if (i != reductions[0])
        results *= bound;
    if (results >= minThreads || total < minLength)
      return 1;
    // Each thread of the first stage sums R / c elements, each of the
    // second c: the divisor closest to sqrt(R) makes the longest sequential
    // chain, R / c + c, shortest.
    int64_t best = 1, cost = total + 1;
    for (int64_t c = 2; c * results <= minThreads && total / c >= minChunk; ++c)
      if (total % c == 0 && total / c + c < cost) {
        best = c;
        cost = total / c + c;
      }
    return best;
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
