//===- MapParallelLoops.cpp - Loops mapped to blocks and threads ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-map-parallel-loops: every linalg operation and memref.copy of the
// host code becomes a parallel loop nest (reductions as sequential loops
// inside), tiled so that the innermost parallel dimension runs on
// threadIdx.x of blocks of `block-size` threads (coalesced accesses) and
// the next dimensions on the grid, with the gpu.loop_dim_map attributes
// that convert-parallel-loops-to-gpu reads. Elementwise operations on
// aligned buffers handle `vector-width` elements per thread.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include <algorithm>

namespace ga {
#define GEN_PASS_DEF_GAGPUMAPPARALLELLOOPSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::cuda;

namespace {

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
  return isa_and_nonnull<memref::AllocOp>(viewSource(buffer).getDefiningOp());
}

/// Whether `map`, over `n` loops, reads the innermost loop as its
/// innermost result.
bool readsInnermost(AffineMap map, unsigned n) {
  return map.getNumResults() > 0 &&
         map.getResults().back() == getAffineDimExpr(n - 1, map.getContext());
}

/// Whether vectorizeElementwise can rewrite `op` with groups of `width`
/// elements (its conditions below).
bool canVectorizeElementwise(linalg::GenericOp op, int64_t width) {
  unsigned n = op.getNumLoops();
  if (width < 2 || n == 0 || op.getNumParallelLoops() != n ||
      op.getNumDpsInits() == 0)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      ranges[n - 1] % width != 0 || ranges[n - 1] / width < 32)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!type || !map.isProjectedPermutation())
      return false;
    if (!readsInnermost(map, n)) {
      // Read once per group and broadcast; an init must be written whole.
      if (op.isDpsInit(&operand) ||
          llvm::any_of(map.getResults(),
                       [&](AffineExpr e) { return e.isFunctionOfDim(n - 1); }))
        return false;
      continue;
    }
    SmallVector<int64_t> strides;
    int64_t offset;
    if (type.getElementTypeBitWidth() != 32 ||
        failed(type.getStridesAndOffset(strides, offset)) ||
        ShapedType::isDynamic(offset) || offset % width != 0 ||
        strides.back() != 1 || !viewOfAllocation(operand.get()))
      return false;
    for (int64_t stride : ArrayRef<int64_t>(strides).drop_back())
      if (ShapedType::isDynamic(stride) || stride % width != 0)
        return false;
  }
  Block *body = op.getBlock();
  for (Operation &nested : body->without_terminator()) {
    bool constant = isa<arith::ConstantOp>(nested);
    if (nested.getNumRegions() != 0 ||
        (!constant && !nested.hasTrait<OpTrait::Elementwise>()) ||
        llvm::any_of(nested.getResultTypes(),
                     [](Type t) { return !t.isIntOrFloat(); }))
      return false;
  }
  return true;
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
  if (!canVectorizeElementwise(op, width))
    return failure();
  unsigned n = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Block *body = op.getBlock();
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

/// Parallel dimensions first, so that a reduction over an outer dimension
/// (a bias gradient: the sum over rows) is one kernel whose threads each
/// sum their column, not one kernel per row. Each output element is still
/// summed in the same order. Returns the operation to lower (`op` where it
/// needs no interchange or is not a linalg.generic).
static linalg::LinalgOp parallelDimensionsFirst(IRRewriter &rewriter,
                                                linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return op;
  SmallVector<unsigned> order;
  for (auto [d, type] : llvm::enumerate(generic.getIteratorTypesArray()))
    if (type == utils::IteratorType::parallel)
      order.push_back(d);
  for (auto [d, type] : llvm::enumerate(generic.getIteratorTypesArray()))
    if (type != utils::IteratorType::parallel)
      order.push_back(d);
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
    return op;
  rewriter.setInsertionPoint(generic);
  FailureOr<linalg::GenericOp> swapped =
      linalg::interchangeGenericOp(rewriter, generic, order);
  return succeeded(swapped) ? cast<linalg::LinalgOp>(swapped->getOperation())
                            : op;
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
      op = parallelDimensionsFirst(rewriter, op);
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

    for (Region &region : root->getRegions()) {
      if (fuseLoops)
        ga::cuda::fuseParallelLoops(region);
      if (fuseRows)
        ga::cuda::fuseRowGroups(region, blockSize);
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

} // namespace
