//===- GatherAtUse.cpp - Sharded parameters gathered where they are read --===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-gather-at-use: a parameter held as the rank's shard (stage 3 of
// train-shard-state) is gathered once at the function's entry:
//
//   %g = train.all_gather %shard : tensor<c x T> -> tensor<r*c x T>
//   %w = <tensor.extract_slice, tensor.expand_shape, ...> %g
//   ... everything that reads %w
//
// The gather (and the views on the way) is cloned right before each
// "anchor" that reads the parameter: the ancestor of the reader that is an
// operation of the function's entry block or of the body of a loop of
// constant bounds in it (the micro-batch loop). Views (slices, reshapes)
// are followed to the operations that read through them, so that a layer's
// slice of a stacked parameter, read in the forward and again in the
// backward, does not keep the gathered buffer alive in between. So every
// rank gathers in the same order, the same number of times, and a whole
// parameter lives only while its anchor runs.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "train/TrainOps.h"

#include "llvm/ADT/MapVector.h"

namespace ga {
#define GEN_PASS_DEF_TRAINGATHERATUSEPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga;
using namespace ga::train;

namespace {

/// A reshape or a slice: what a gathered parameter is read through, which
/// does not read its elements itself.
bool isView(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::CastOp>(op);
}

/// A loop in `entry` whose body runs the same number of times on every
/// rank: constant bounds and step.
bool isAnchorLoop(Operation *op, Block *entry) {
  auto loop = dyn_cast<scf::ForOp>(op);
  return loop && loop->getBlock() == entry &&
         getConstantIntValue(loop.getLowerBound()) &&
         getConstantIntValue(loop.getUpperBound()) &&
         getConstantIntValue(loop.getStep());
}

/// The ancestor of `user` before which its gather goes.
Operation *anchorOf(Operation *user, Block *entry) {
  Operation *op = user;
  while (op->getBlock() != entry &&
         !isAnchorLoop(op->getBlock()->getParentOp(), entry))
    op = op->getParentOp();
  return op;
}

/// A use of the gathered parameter by an operation that reads it (not a
/// view), through the views from the gather to it.
struct Reader {
  OpOperand *use;
  SmallVector<Operation *> path; ///< The views, from the gather's side.
};

/// The readers of `value` through the views that are anchors themselves
/// (top-level operations of the function or of its loop): a view nested
/// in another operation reads through it like any other reader, since its
/// own operands are defined there.
void collectReaders(Value value, Block *entry, SmallVector<Operation *> &path,
                    SmallVector<Reader> &readers,
                    SmallVector<Operation *> &views) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isView(user) && use.getOperandNumber() == 0 &&
        anchorOf(user, entry) == user) {
      views.push_back(user);
      path.push_back(user);
      collectReaders(user->getResult(0), entry, path, readers, views);
      path.pop_back();
      continue;
    }
    readers.push_back({&use, path});
  }
}

struct TrainGatherAtUsePass
    : ga::impl::TrainGatherAtUsePassBase<TrainGatherAtUsePass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // A function of several blocks (unstructured control flow) keeps its
    // gathers where they are: every rank might not reach every block.
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return;
    Block *entry = &fn.getBody().front();
    SmallVector<AllGatherOp> gathers;
    for (auto gather : entry->getOps<AllGatherOp>())
      if (auto arg = dyn_cast<BlockArgument>(gather.getInput());
          arg && arg.getOwner() == entry)
        gathers.push_back(gather);
    for (AllGatherOp gather : gathers)
      moveToReaders(gather, entry);
  }

  void moveToReaders(AllGatherOp gather, Block *entry) {
    SmallVector<Operation *> path, views;
    SmallVector<Reader> readers;
    collectReaders(gather.getResult(), entry, path, readers, views);
    // The readers, grouped by the anchor they are gathered for.
    llvm::MapVector<Operation *, SmallVector<Reader *>> byAnchor;
    for (Reader &reader : readers)
      byAnchor[anchorOf(reader.use->getOwner(), entry)].push_back(&reader);
    // Already where it goes: one anchor, after the gather and its views.
    if (byAnchor.size() == 1) {
      Operation *next = gather->getNextNode();
      while (next && llvm::is_contained(views, next))
        next = next->getNextNode();
      if (next == byAnchor.front().first)
        return;
    }
    // Each copy runs where its anchor does, whatever the order made: the
    // gather, then the views on the way to the anchor's readers (the views'
    // other operands are defined before the views, so before the anchor).
    for (auto &[anchor, group] : byAnchor) {
      OpBuilder b(anchor);
      IRMapping map;
      b.clone(*gather, map);
      for (Reader *reader : group) {
        for (Operation *view : reader->path)
          if (!map.contains(view->getResult(0)))
            b.clone(*view, map);
        Value read = reader->use->get();
        reader->use->set(map.lookup(read));
      }
    }
    for (Operation *view : llvm::reverse(views))
      view->erase();
    gather->erase();
  }
};

} // namespace
