//===- ReleaseBuffers.cpp - Free each buffer after its last use -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// MLIR's ownership-based deallocation frees a buffer at the end of the block
// that allocates it: every activation of a step stays allocated until the
// step returns, and the step's peak is the sum of all its buffers. This pass
// moves each such deallocation right after the buffer's last use, and lets a
// buffer that is copied into a fresh one just before it dies be that buffer
// (the copies the deallocation pipeline makes of returned values), so that
// the step holds only what its later operations still read.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/Common/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace ga {
#define GEN_PASS_DEF_GARELEASEBUFFERSPASS
#include "ga/Codegen/Common/Passes.h.inc"
} // namespace ga

using namespace mlir;

/// The values that view the same memory as `buffer` (itself included) and
/// their users, or failure when the memory may be reached otherwise than
/// through them: a view is returned, yielded, passed to a branch, taken
/// as a pointer, or given to an operation whose memref results might alias
/// it.
static LogicalResult collectUsers(Value buffer,
                                  SmallVectorImpl<Operation *> &users) {
  SmallVector<Value> worklist{buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      users.push_back(user);
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          isa<memref::ExtractAlignedPointerAsIndexOp>(user))
        return failure();
      if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(user)) {
        worklist.push_back(metadata.getBaseBuffer());
        continue;
      }
      bool isView = isa<memref::CastOp, ViewLikeOpInterface>(user);
      for (Value result : user->getResults()) {
        if (!isa<BaseMemRefType>(result.getType()))
          continue;
        if (!isView)
          return failure();
        worklist.push_back(result);
      }
    }
  }
  return success();
}

/// `%b = alloc; copy %a to %b; ...; dealloc %a` where nothing reads `%a`
/// after the copy: `%b` becomes `%a`. Returns whether it rewrote.
static bool elideCopy(memref::CopyOp copy) {
  Block *block = copy->getBlock();
  auto source = copy.getSource().getDefiningOp<memref::AllocOp>();
  auto target = copy.getTarget().getDefiningOp<memref::AllocOp>();
  if (!source || !target || source->getBlock() != block ||
      target->getBlock() != block || source.getType() != target.getType() ||
      source.getAlignment().value_or(0) < target.getAlignment().value_or(0))
    return false;
  // The target: written first by the copy.
  for (Operation *user : target->getUsers()) {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || (ancestor != copy && ancestor->isBeforeInBlock(copy)))
      return false;
  }
  // The source: only its deallocation after the copy.
  SmallVector<Operation *> users;
  if (failed(collectUsers(source.getResult(), users)))
    return false;
  memref::DeallocOp dealloc;
  for (Operation *user : users) {
    if (user == copy)
      continue;
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor)
      return false;
    if (ancestor->isBeforeInBlock(copy))
      continue;
    auto free = dyn_cast<memref::DeallocOp>(user);
    if (!free || free->getBlock() != block || dealloc)
      return false;
    dealloc = free;
  }
  if (!dealloc)
    return false;
  target.getResult().replaceAllUsesWith(source.getResult());
  copy.erase();
  dealloc.erase();
  target.erase();
  return true;
}

/// The position of every operation in its block, taken once before the
/// deallocations move: moving one would invalidate the block's operation
/// order, and isBeforeInBlock would then renumber the whole block for the
/// next one (quadratic in the size of a step). Moving deallocations leaves
/// the order of the other operations as it is, and a deallocation is
/// compared only before it moves.
using Positions = llvm::DenseMap<Operation *, unsigned>;

/// Moves `dealloc` of a buffer allocated in its block right after the last
/// operation of the block that uses the buffer. Returns whether it moved.
static bool releaseEarly(memref::DeallocOp dealloc, const Positions &at) {
  Block *block = dealloc->getBlock();
  auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != block)
    return false;
  SmallVector<Operation *> users;
  if (failed(collectUsers(alloc.getResult(), users)))
    return false;
  Operation *last = alloc;
  for (Operation *user : users) {
    if (user == dealloc)
      continue;
    if (isa<memref::DeallocOp>(user))
      return false; // freed elsewhere as well
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor)
      return false;
    if (at.lookup(last) < at.lookup(ancestor))
      last = ancestor;
  }
  if (last == dealloc || at.lookup(dealloc) < at.lookup(last) ||
      last->getNextNode() == dealloc)
    return false;
  dealloc->moveAfter(last);
  return true;
}

namespace {
struct GaReleaseBuffersPass
    : ga::impl::GaReleaseBuffersPassBase<GaReleaseBuffersPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies)
      elideCopy(copy);
    SmallVector<memref::DeallocOp> deallocs;
    Positions at;
    getOperation()->walk([&](Block *block) {
      unsigned position = 0;
      for (Operation &op : *block)
        at[&op] = position++;
    });
    getOperation()->walk(
        [&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (memref::DeallocOp dealloc : deallocs)
      releaseEarly(dealloc, at);
  }
};
} // namespace
