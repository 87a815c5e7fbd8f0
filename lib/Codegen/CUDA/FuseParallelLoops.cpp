//===- FuseParallelLoops.cpp - Adjacent parallel loops as one kernel ------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-fuse-parallel-loops, and the fusion step of
// ga-gpu-map-parallel-loops: two parallel loop nests of the host code, next
// to each other (only allocations, deallocations, which move after the
// fused loop but never past an allocation of their block size, and
// operations without memory effects between them) and over the same
// iteration space, become one loop whose
// iterations run the first body and then the second, so that they launch
// one kernel instead of two. The fill of a reduction's accumulator and the
// reduction, the statistics of a row and the elementwise operations that
// read them, the siblings that read the same rows: each pair saves a
// launch and a round trip of its values through device memory.
//
// Fusion is legal when every buffer that both loops touch and one of them
// writes is touched, in both, only at the iteration's own element: through
// the same memref value, with indices that are the loop's induction
// variables (each once, as they are, or the innermost times the width of a
// vector access), in a layout whose elements do not overlap. Then no
// iteration reads or writes what another iteration wrote or read, and each
// iteration sees what it saw before: the results are bitwise the same, in
// any order of iterations. Anything else (an access through another view
// of a shared buffer, a shifted or gathered index, an operation with other
// memory effects, a nested parallel loop) keeps the loops apart.
//
// The row groups (ga-gpu-fuse-parallel-loops row-groups) are in
// RowGroups.cpp; what both share is declared in LoopFusion.h.
//
//===----------------------------------------------------------------------===//

#include "LoopFusion.h"
#include "Utils.h"
#include "ga/Analysis/BufferMemory.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallBitVector.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUFUSEPARALLELLOOPSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::cuda::fusion;

namespace ga::cuda::fusion {

bool isAllocation(Value v) {
  return v.getDefiningOp<memref::AllocOp>() ||
         v.getDefiningOp<memref::AllocaOp>();
}

bool isFunctionArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner()->isEntryBlock() &&
         isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
}

/// Whether the buffers `a` and `b` (roots of views) may share memory:
/// distinct allocations do not, nor an allocation and a function's
/// argument or a global; anything else may.
bool mayAlias(Value a, Value b) {
  if (a == b)
    return true;
  bool allocA = isAllocation(a), allocB = isAllocation(b);
  if (allocA && allocB)
    return false;
  auto globalA = a.getDefiningOp<memref::GetGlobalOp>();
  auto globalB = b.getDefiningOp<memref::GetGlobalOp>();
  if (globalA && globalB)
    return globalA.getName() == globalB.getName();
  if (allocA && (isFunctionArgument(b) || globalB))
    return false;
  if (allocB && (isFunctionArgument(a) || globalA))
    return false;
  return true;
}

/// Every access of `loop`'s body, or nothing when the body holds an
/// operation whose memory effects are not loads and stores of memrefs (a
/// call, an allocation, an atomic) or a nested parallel loop.
std::optional<SmallVector<Access>> accessesOf(scf::ParallelOp loop) {
  SmallVector<Access> accesses;
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      accesses.push_back({load.getMemRef(), load.getIndices(), load.getType(),
                          /*write=*/false});
      return WalkResult::advance();
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      accesses.push_back({store.getMemRef(), store.getIndices(),
                          store.getValueToStore().getType(), /*write=*/true});
      return WalkResult::advance();
    }
    if (auto load = dyn_cast<vector::LoadOp>(op)) {
      accesses.push_back({load.getBase(), load.getIndices(),
                          load.getVectorType(), /*write=*/false});
      return WalkResult::advance();
    }
    if (auto store = dyn_cast<vector::StoreOp>(op)) {
      accesses.push_back({store.getBase(), store.getIndices(),
                          store.getVectorType(), /*write=*/true});
      return WalkResult::advance();
    }
    // Sequential loops and branches: their operations are visited one by
    // one. The terminators of the parallel loop carry no values (loops
    // with results are not candidates).
    if (isa<scf::ForOp, scf::IfOp, scf::YieldOp>(op))
      return WalkResult::advance();
    if (auto reduce = dyn_cast<scf::ReduceOp>(op))
      return reduce->getNumOperands() == 0 ? WalkResult::advance()
                                           : WalkResult::interrupt();
    if (op->getNumRegions() == 0 && isMemoryEffectFree(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  if (result.wasInterrupted())
    return std::nullopt;
  return accesses;
}

/// The position of the induction variable of `loop` that `index` is, and
/// the constant it is multiplied by (identity affine.apply operations and
/// arith.muli by constants, as linalg's lowering and the vector code make
/// them), or nothing.
std::optional<std::pair<unsigned, int64_t>>
scaledDimension(Value index, scf::ParallelOp loop) {
  int64_t scale = 1;
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(index)) {
      if (arg.getOwner() != loop.getBody())
        return std::nullopt;
      return std::make_pair(arg.getArgNumber(), scale);
    }
    Operation *def = index.getDefiningOp();
    if (auto apply = dyn_cast_or_null<affine::AffineApplyOp>(def)) {
      if (!apply.getAffineMap().isIdentity() || apply->getNumOperands() != 1)
        return std::nullopt;
      index = apply->getOperand(0);
      continue;
    }
    if (auto mul = dyn_cast_or_null<arith::MulIOp>(def)) {
      if (std::optional<int64_t> c = getConstantIntValue(mul.getRhs())) {
        scale *= *c;
        index = mul.getLhs();
        continue;
      }
      if (std::optional<int64_t> c = getConstantIntValue(mul.getLhs())) {
        scale *= *c;
        index = mul.getRhs();
        continue;
      }
    }
    return std::nullopt;
  }
}

/// Whether distinct indices of `type` address distinct elements: static
/// sizes and strides, each dimension's stride at least the extent of the
/// dimensions inside it.
bool elementsDoNotOverlap(MemRefType type) {
  if (!type.hasStaticShape())
    return false;
  if (type.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  SmallVector<std::pair<int64_t, int64_t>> dims; // (stride, size)
  for (auto [stride, size] : llvm::zip(strides, type.getShape())) {
    if (size == 1)
      continue;
    if (ShapedType::isDynamic(stride) || stride <= 0)
      return false;
    dims.push_back({stride, size});
  }
  llvm::sort(dims);
  int64_t extent = 1;
  for (auto [stride, size] : dims) {
    if (stride < extent)
      return false;
    extent = stride * size;
  }
  return true;
}

/// The induction variable and scale of each index of `access` when it
/// touches only the elements of its own iteration of `loop` (no other
/// iteration touches them): every induction variable once, scaled by 1,
/// or the last index of a vector access by the vector's length.
std::optional<SmallVector<std::pair<unsigned, int64_t>>>
ownElement(const Access &access, scf::ParallelOp loop) {
  auto type = dyn_cast<MemRefType>(access.memref.getType());
  if (!type || !elementsDoNotOverlap(type) ||
      access.indices.size() != loop.getNumLoops())
    return std::nullopt;
  int64_t width = 1;
  if (auto vector = dyn_cast<VectorType>(access.type)) {
    if (vector.getRank() != 1 || vector.isScalable())
      return std::nullopt;
    width = vector.getNumElements();
  }
  SmallVector<std::pair<unsigned, int64_t>> dims;
  llvm::SmallBitVector seen(loop.getNumLoops());
  for (auto [k, index] : llvm::enumerate(access.indices)) {
    std::optional<std::pair<unsigned, int64_t>> dim =
        scaledDimension(index, loop);
    int64_t expected = k + 1 == access.indices.size() ? width : 1;
    if (!dim || dim->second != expected || seen.test(dim->first))
      return std::nullopt;
    seen.set(dim->first);
    dims.push_back(*dim);
  }
  return dims;
}

/// The block the CUDA runtime's caching allocator gives `alloc`, as the
/// memory model of device budgets counts it (its bytes and alignment,
/// rounded up to 512), or nothing for a dynamic shape.
std::optional<int64_t> deviceBlock(memref::AllocOp alloc) {
  std::optional<int64_t> bytes =
      ga::allocationBytes(alloc.getType(), alloc.getAlignment().value_or(0));
  if (!bytes)
    return std::nullopt;
  return ga::deviceBlockBytes(*bytes);
}

/// Whether both loops have no results, no mapping yet, no parallel loop
/// inside, and the same bounds and steps.
bool sameIterationSpace(scf::ParallelOp a, scf::ParallelOp b) {
  if (a.getNumLoops() != b.getNumLoops())
    return false;
  auto same = [](ValueRange x, ValueRange y) {
    for (auto [u, v] : llvm::zip(x, y)) {
      if (u == v)
        continue;
      std::optional<int64_t> cu = getConstantIntValue(u);
      std::optional<int64_t> cv = getConstantIntValue(v);
      if (!cu || !cv || *cu != *cv)
        return false;
    }
    return true;
  };
  return same(a.getLowerBound(), b.getLowerBound()) &&
         same(a.getUpperBound(), b.getUpperBound()) &&
         same(a.getStep(), b.getStep());
}

/// Whether `first` may run, iteration by iteration, just before `second`
/// (the header's condition).
bool canFuse(scf::ParallelOp first, scf::ParallelOp second) {
  if (!sameIterationSpace(first, second))
    return false;
  std::optional<SmallVector<Access>> a = accessesOf(first);
  std::optional<SmallVector<Access>> b = accessesOf(second);
  if (!a || !b)
    return false;
  for (const Access &x : *a) {
    for (const Access &y : *b) {
      if ((!x.write && !y.write) || !mayAlias(ga::cuda::viewSource(x.memref),
                                              ga::cuda::viewSource(y.memref)))
        continue;
      if (x.memref != y.memref || x.type != y.type)
        return false;
      auto ownX = ownElement(x, first);
      auto ownY = ownElement(y, second);
      if (!ownX || !ownY || *ownX != *ownY)
        return false;
    }
  }
  return true;
}

/// Whether `loop` is a loop this step may fuse: in host code, not mapped
/// yet, without results, without a parallel loop inside.
bool isCandidate(scf::ParallelOp loop) {
  if (loop.getNumResults() != 0 || loop->hasAttr(gpu::getMappingAttrName()) ||
      loop.getNumLoops() == 0 || ga::cuda::insideKernel(loop) ||
      loop->getParentOfType<scf::ParallelOp>())
    return false;
  return !loop.getBody()
              ->walk([](scf::ParallelOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
}

/// The body of `first` at the start of `second`'s, `first` erased.
void fuseInto(scf::ParallelOp first, scf::ParallelOp second) {
  IRMapping map;
  map.map(first.getInductionVars(), second.getInductionVars());
  OpBuilder b(second.getBody(), second.getBody()->begin());
  for (Operation &op : first.getBody()->without_terminator())
    b.clone(op, map);
  first.erase();
}

} // namespace ga::cuda::fusion

namespace ga::cuda::fusion {

/// Walks the blocks of host code in `region` and hands `joiner` each run of
/// candidate loops with only allocations, deallocations and operations
/// without memory effects between them (whether the deallocations may
/// move past the allocations is the joiner's to ask: freesMayMoveAfter).
void joinAdjacentLoops(Region &region, RunJoiner &joiner) {
  // The blocks of host code outside parallel loops (collected first: a
  // fusion erases a loop and the blocks inside it).
  SmallVector<Block *> blocks;
  region.walk([&](Block *block) {
    Operation *parent = block->getParentOp();
    if (!ga::cuda::insideKernel(parent) && !isa<scf::ParallelOp>(parent) &&
        !parent->getParentOfType<scf::ParallelOp>())
      blocks.push_back(block);
  });
  for (Block *block : blocks) {
    bool inRun = false;
    auto finish = [&] {
      if (inRun)
        joiner.finish();
      inRun = false;
    };
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        if (!isCandidate(loop)) {
          finish();
          continue;
        }
        if (!inRun || !joiner.extend(loop)) {
          finish();
          joiner.start(loop);
          inRun = true;
        }
        continue;
      }
      if (isa<memref::AllocOp, memref::DeallocOp>(op) ||
          (op.getNumRegions() == 0 && isMemoryEffectFree(&op)))
        continue;
      finish();
    }
    finish();
  }
}

/// The device allocator's block size of the buffer `free` frees, if known.
std::optional<int64_t> freedBlock(memref::DeallocOp free) {
  auto alloc = free.getMemref().getDefiningOp<memref::AllocOp>();
  return alloc ? deviceBlock(alloc) : std::nullopt;
}

/// Whether the deallocations between `first` and `last`, operations of one
/// block, may move after `last` with the device's peak the same: every
/// allocation between them is a block of a known size, and of a size none
/// of the deallocations before it frees (the CUDA runtime's caching
/// allocator gives a freed block to an allocation of its size alone, so
/// every size's most blocks at once stay the same).
bool freesMayMoveAfter(Operation *first, Operation *last) {
  SmallVector<std::optional<int64_t>> freed;
  for (Operation *op = first->getNextNode(); op != last;
       op = op->getNextNode()) {
    if (auto free = dyn_cast<memref::DeallocOp>(op)) {
      freed.push_back(freedBlock(free));
      continue;
    }
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc)
      continue;
    std::optional<int64_t> block = deviceBlock(alloc);
    if (!block || llvm::any_of(freed, [&](std::optional<int64_t> size) {
          return !size || *size == *block;
        }))
      return false;
  }
  return true;
}

/// Moves the deallocations between `first` and `last` (freesMayMoveAfter)
/// right after `after`, in their order.
void moveFreesAfter(Operation *first, Operation *last, Operation *after) {
  SmallVector<Operation *> frees;
  for (Operation *op = first->getNextNode(); op != last; op = op->getNextNode())
    if (isa<memref::DeallocOp>(op))
      frees.push_back(op);
  for (Operation *free : llvm::reverse(frees))
    free->moveAfter(after);
}

/// ga-gpu-fuse-parallel-loops' runs: each loop fused into the next.
struct SameSpaceJoiner : RunJoiner {
  scf::ParallelOp previous;
  void start(scf::ParallelOp loop) override { previous = loop; }
  bool extend(scf::ParallelOp loop) override {
    if (!freesMayMoveAfter(previous, loop) || !canFuse(previous, loop))
      return false;
    moveFreesAfter(previous, loop, loop);
    fuseInto(previous, loop);
    previous = loop;
    return true;
  }
};

} // namespace ga::cuda::fusion

namespace {

/// Whether `op` is a launch of one block of one thread with a body of one
/// block, synchronous, without attributions or clusters.
bool isSingleThreadLaunch(Operation *op) {
  auto launch = dyn_cast<gpu::LaunchOp>(op);
  if (!launch || !ga::cuda::isPlainLaunch(launch) ||
      !launch.getBody().hasOneBlock())
    return false;
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  return llvm::all_of(
      ValueRange{grid.x, grid.y, grid.z, block.x, block.y, block.z},
      [](Value size) { return isConstantIntValue(size, 1); });
}

} // namespace

namespace {

struct GaGpuFuseParallelLoopsPass
    : ga::impl::GaGpuFuseParallelLoopsPassBase<GaGpuFuseParallelLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (rowGroups && (blockSize < 1 || blockSize > 1024)) {
      getOperation()->emitError()
          << "ga-gpu-fuse-parallel-loops: block-size must be in [1, 1024] "
             "(CUDA's threads per block), got "
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    for (Region &region : getOperation()->getRegions()) {
      ga::cuda::fuseParallelLoops(region);
      if (rowGroups)
        ga::cuda::fuseRowGroups(region, blockSize);
    }
  }
};

} // namespace

void ga::cuda::fuseSingleThreadLaunches(Region &region) {
  SmallVector<Block *> blocks;
  region.walk([&](Block *block) {
    if (!insideKernel(block->getParentOp()))
      blocks.push_back(block);
  });
  for (Block *block : blocks) {
    gpu::LaunchOp previous;
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (isSingleThreadLaunch(&op)) {
        auto launch = cast<gpu::LaunchOp>(op);
        if (previous && freesMayMoveAfter(previous, launch)) {
          // The previous body first, in this launch's thread.
          Block &body = launch.getBody().front();
          IRMapping map;
          map.map(previous.getBody().front().getArguments(),
                  body.getArguments());
          OpBuilder b(&body, body.begin());
          for (Operation &inner :
               previous.getBody().front().without_terminator())
            b.clone(inner, map);
          moveFreesAfter(previous, launch, launch);
          previous.erase();
        }
        previous = launch;
        continue;
      }
      if (isa<memref::AllocOp, memref::DeallocOp>(op) ||
          (op.getNumRegions() == 0 && isMemoryEffectFree(&op)))
        continue;
      previous = nullptr;
    }
  }
}

void ga::cuda::fuseParallelLoops(Region &region) {
  SameSpaceJoiner joiner;
  joinAdjacentLoops(region, joiner);
}
