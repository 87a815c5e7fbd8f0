//===- ShardAccumulators.cpp - Gradients reduce-scattered where made -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-shard-accumulators: at stage 2 and 3 of sharded data parallelism
// (train-shard-state) each gradient is reduce-scattered once the step has
// accumulated it, so that a rank keeps 1/r of it from there on. Before this
// pass the whole gradient still exists from the first micro-batch to the
// reduction:
//
//   %z = linalg.fill 0 -> tensor<shape>
//   %acc = scf.for ... iter_args(%a = %z) {      // the micro-batch loop
//     ... %g = <reductions with %a as their init> ...
//     scf.yield %g
//   }
//   %s = train.reduce_scatter sum (flat, padded %acc) -> tensor<c>
//
// Two rewrites keep the whole gradient alive only while it is computed:
//
// - In a loop of constant bounds, an accumulator whose result is only
//   reduce-scattered, that starts from zeros and that the body only
//   accumulates into (it reaches the yield only as the init of additive
//   reductions and products, through slices), becomes the rank's shard:
//   each micro-batch computes its gradient from zeros, reduce-scatters it
//   right after its last write, and adds the shard to the loop's
//   accumulator of c elements.
// - Outside such a loop (one micro-batch), the reduce-scatter of a value
//   computed in the same block moves right after that value's definition,
//   and the zeros the value accumulates from move right before their first
//   reader, so that the whole gradient lives from its first write to its
//   last, not from the start of the step to its end.
//
// The second rewrite moves code only: the values are the same, bit for
// bit. The first sums each micro-batch's gradient across the ranks before
// it sums the micro-batches (the order of float32 additions changes, not
// what is added); the ranks' result is the same sum of every example's
// gradient, and the loss and the count are untouched.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/BufferMemory.h"
#include "ga/Transforms/Passes.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINSHARDACCUMULATORSPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga;
using namespace ga::train;

namespace {

/// The operations from a value to the reduce-scatter of its flat, padded
/// elements, in order (the scatter last), and the value.
struct ScatterChain {
  Value source;
  SmallVector<Operation *> ops;
};

/// What a reduce-scatter of a whole gradient reads through: reshapes to
/// the flat vector and a pad (the gradient written into zeros), built by
/// train-shard-state.
bool isFlattening(Operation *op) {
  return isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
             tensor::InsertSliceOp>(op);
}

/// Whether `insert` pads its source with zeros for a reduce-scatter: a
/// vector written at offset 0 into zeros that nothing else reads.
bool isPad(tensor::InsertSliceOp insert) {
  return insert.getDestType().getRank() == 1 &&
         isZeroTensor(insert.getDest()) && insert.getDest().hasOneUse() &&
         insert.getOffsets().empty() && insert.getSizes().empty() &&
         insert.getStrides().empty() && insert.getStaticOffsets()[0] == 0;
}

/// The chain of `scatter` in its block: the reshapes and the pad between
/// it and the value it flattens, and the pad's zeros where they are made in
/// the block.
FailureOr<ScatterChain> chainOf(ReduceScatterOp scatter) {
  if (scatter.getKind() != ReduceKind::Sum)
    return failure();
  Block *block = scatter->getBlock();
  ScatterChain chain;
  SmallVector<Operation *> reversed = {scatter};
  Value value = scatter.getInput();
  while (Operation *def = value.getDefiningOp()) {
    if (def->getBlock() != block || !value.hasOneUse())
      break;
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(def)) {
      if (!isPad(insert))
        break;
      reversed.push_back(def);
      if (auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
          fill && fill->getBlock() == block) {
        reversed.push_back(fill);
        Value empty = fill.getOutputs()[0];
        if (auto made = empty.getDefiningOp<tensor::EmptyOp>();
            made && made->getBlock() == block && empty.hasOneUse())
          reversed.push_back(made);
      }
      value = insert.getSource();
      continue;
    }
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      break;
    reversed.push_back(def);
    value = def->getOperand(0);
  }
  chain.source = value;
  chain.ops.assign(reversed.rbegin(), reversed.rend());
  // In block order: the pad's zeros before the insert that reads them.
  llvm::sort(chain.ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return chain;
}

/// Clones `chain` at `b` reading `source` in place of its source; returns
/// the new scatter's result.
Value cloneChain(OpBuilder &b, const ScatterChain &chain, Value source) {
  IRMapping map;
  map.map(chain.source, source);
  Operation *last = nullptr;
  for (Operation *op : chain.ops)
    last = b.clone(*op, map);
  return last->getResult(0);
}

/// Erases `chain` once its scatter's result is no longer read.
void eraseChain(const ScatterChain &chain) {
  for (Operation *op : llvm::reverse(chain.ops))
    if (op->use_empty())
      op->erase();
}

/// Whether the payload of `generic` adds its init `init` (an output operand)
/// to something that does not read it, and yields the sum for that output.
bool addsToInit(linalg::GenericOp generic, OpOperand *init) {
  BlockArgument out = generic.getMatchingBlockArgument(init);
  if (!out.hasOneUse())
    return false;
  auto add = dyn_cast<arith::AddFOp>(*out.getUsers().begin());
  if (!add || !add->hasOneUse())
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(*add->getUsers().begin());
  unsigned position = generic.getTiedOpResult(init).getResultNumber();
  return yield && yield.getOperand(position) == add.getResult();
}

/// Whether `insert` writes back into its destination the slice it read
/// from it, accumulated into: its source is the result of products and
/// generics that take, as their init, an extract of the same slice of the
/// destination (then the insert adds to the destination only).
bool updatesOwnSlice(tensor::InsertSliceOp insert) {
  Value value = insert.getSource();
  while (Operation *def = value.getDefiningOp()) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
      return slice.getSource() == insert.getDest() &&
             slice.getSourceType() == insert.getDestType() &&
             slice.getResultType() == insert.getSourceType() &&
             isEqualConstantIntOrValueArray(slice.getMixedOffsets(),
                                            insert.getMixedOffsets()) &&
             isEqualConstantIntOrValueArray(slice.getMixedSizes(),
                                            insert.getMixedSizes()) &&
             isEqualConstantIntOrValueArray(slice.getMixedStrides(),
                                            insert.getMixedStrides());
    auto linalgOp = dyn_cast<linalg::LinalgOp>(def);
    if (!linalgOp)
      return false;
    value = linalgOp.getDpsInitOperand(cast<OpResult>(value).getResultNumber())
                ->get();
  }
  return false;
}

/// Whether `insert` writes into its destination, at some indices, the
/// element it read there plus a value: `dest[i] = dest[i] + x`.
bool updatesOwnElement(tensor::InsertOp insert) {
  auto add = insert.getScalar().getDefiningOp<arith::AddFOp>();
  if (!add || !add->hasOneUse())
    return false;
  for (Value operand : add->getOperands()) {
    auto element = operand.getDefiningOp<tensor::ExtractOp>();
    if (element && element.getTensor() == insert.getDest() &&
        element->hasOneUse() &&
        llvm::equal(element.getIndices(), insert.getIndices()))
      return true;
  }
  return false;
}

/// Whether `arg`, an iteration argument of `loop` at `position`, is only
/// accumulated into: through slices, as the init of products and of
/// generics that add to their init, to the yield at `position`. Then the
/// body yields `arg` plus what it accumulates, and starting it from zeros
/// gives what the iteration adds.
bool onlyAccumulates(scf::ForOp loop, BlockArgument arg, unsigned position) {
  SmallVector<Value> worklist = {arg};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto yield = dyn_cast<scf::YieldOp>(user)) {
        if (yield->getParentOp() != loop || use.getOperandNumber() != position)
          return false;
        continue;
      }
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
        worklist.push_back(slice.getResult());
        continue;
      }
      // A nested loop that accumulates into it (a loss chunk loop).
      if (auto inner = dyn_cast<scf::ForOp>(user)) {
        OpResult result = inner.getTiedLoopResult(&use);
        if (!result ||
            !onlyAccumulates(inner, inner.getTiedLoopRegionIterArg(&use),
                             result.getResultNumber()))
          return false;
        worklist.push_back(result);
        continue;
      }
      // An element of it added to and written back where it was read (an
      // embedding's gradient, row by row).
      if (auto element = dyn_cast<tensor::ExtractOp>(user)) {
        // Read once, by an add whose one reader writes the sum back.
        if (!element->hasOneUse())
          return false;
        Operation *add = *element->getUsers().begin();
        if (!isa<arith::AddFOp>(add) || !add->hasOneUse())
          return false;
        auto insert = dyn_cast<tensor::InsertOp>(*add->getUsers().begin());
        if (!insert || !updatesOwnElement(insert) ||
            insert.getDest() != element.getTensor())
          return false;
        continue;
      }
      if (auto insert = dyn_cast<tensor::InsertOp>(user)) {
        if (use.get() != insert.getDest() || !updatesOwnElement(insert))
          return false;
        worklist.push_back(insert.getResult());
        continue;
      }
      // A slice of it accumulated into and written back where it was read.
      if (auto insert = dyn_cast<tensor::InsertSliceOp>(user)) {
        if (!updatesOwnSlice(insert))
          return false;
        if (use.get() == insert.getDest())
          worklist.push_back(insert.getResult());
        continue;
      }
      auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
      if (!linalgOp || !linalgOp.isDpsInit(&use) ||
          llvm::is_contained(linalgOp.getDpsInputs(), value))
        return false;
      auto generic = dyn_cast<linalg::GenericOp>(user);
      bool additive = generic ? addsToInit(generic, &use)
                              : linalg::isaContractionOpInterface(linalgOp);
      if (!additive)
        return false;
      worklist.push_back(linalgOp.getTiedOpResult(&use));
    }
  }
  return true;
}

/// The ancestor in `block` of the first operation that reads `value`.
Operation *firstReaderIn(Value value, Block *block) {
  Operation *first = nullptr;
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
      first = inBlock;
  }
  return first;
}

/// Moves the fill of zeros `value` (and its empty tensor, when only it
/// reads that) right before its first reader in its block.
void sinkZeros(Value value) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return;
  Operation *first = firstReaderIn(value, fill->getBlock());
  if (!first || fill->getNextNode() == first)
    return;
  fill->moveBefore(first);
  if (auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
      empty && empty->getBlock() == fill->getBlock() && empty->hasOneUse() &&
      empty->getNumOperands() == 0)
    empty->moveBefore(fill);
}

/// The zeros that `value` accumulates from: followed back through the
/// inits of reductions and products and the destinations of inserts and
/// sources of slices, or null.
Value accumulatedFrom(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<linalg::FillOp>(def))
      return isZeroTensor(value) ? value : Value();
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(def)) {
      value = insert.getDest();
      continue;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
      value = slice.getSource();
      continue;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(def);
    if (!linalgOp)
      return {};
    value = linalgOp.getDpsInitOperand(cast<OpResult>(value).getResultNumber())
                ->get();
  }
  return {};
}

/// Where a chain that reads `value` goes so that it runs once `value` is
/// final: right after its definition in `block`, or at `fallback`.
void setAfterDefinition(OpBuilder &b, Value value, Block *block,
                        Operation *fallback) {
  Operation *def = value.getDefiningOp();
  if (def && def->getBlock() == block)
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPoint(fallback);
}

/// The bytes of the buffer of a tensor of static shape, as the memory
/// model counts them.
int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return allocationBytes(
             MemRefType::get(tensor.getShape(), tensor.getElementType()), 0)
      .value_or(0);
}

/// The micro-batch loop's accumulators that are reduce-scattered become
/// the rank's shards; returns whether `loop` changed.
bool shardLoopAccumulators(scf::ForOp loop, bool onlyWhereSmaller) {
  if (!getConstantIntValue(loop.getLowerBound()) ||
      !getConstantIntValue(loop.getUpperBound()) ||
      !getConstantIntValue(loop.getStep()))
    return false;
  // Result position -> its scatter chain.
  llvm::SmallDenseMap<unsigned, ScatterChain> chains;
  for (OpResult result : loop.getResults()) {
    unsigned i = result.getResultNumber();
    if (!result.hasOneUse())
      continue;
    Operation *user = *result.getUsers().begin();
    // The scatter at the end of the chain that starts at the result.
    Operation *op = user;
    while (op && op->getBlock() == loop->getBlock() && isFlattening(op) &&
           op->hasOneUse())
      op = *op->getUsers().begin();
    auto scatter = dyn_cast_or_null<ReduceScatterOp>(op);
    if (!scatter)
      continue;
    FailureOr<ScatterChain> chain = chainOf(scatter);
    if (failed(chain) || chain->source != result ||
        !isZeroTensor(loop.getInitArgs()[i]) ||
        !onlyAccumulates(loop, loop.getRegionIterArgs()[i], i))
      continue;
    chains[i] = *chain;
  }
  if (chains.empty())
    return false;
  // What it saves: each whole accumulator less its shard; what it costs:
  // a micro-batch's whole gradients beside the shards while they are
  // computed (and padded), estimated as twice the largest. A step whose
  // memory is a few large gradients (a two-layer MLP) keeps them whole.
  if (onlyWhereSmaller) {
    int64_t saved = 0, largest = 0;
    for (auto &[i, chain] : chains) {
      int64_t whole = tensorBytes(loop.getResult(i).getType());
      saved += whole - tensorBytes(chain.ops.back()->getResult(0).getType());
      largest = std::max(largest, whole);
    }
    if (saved <= 2 * largest)
      return false;
  }

  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(loop);
  Location loc = loop.getLoc();
  SmallVector<Value> inits(loop.getInitArgs());
  for (auto &[i, chain] : chains)
    inits[i] =
        zerosLike(rewriter, loc, chain.ops.back()->getResult(0).getType());
  auto sharded =
      scf::ForOp::create(rewriter, loc, loop.getLowerBound(),
                         loop.getUpperBound(), loop.getStep(), inits);
  Block *body = sharded.getBody();
  // Each micro-batch accumulates its gradient from zeros of its own.
  rewriter.setInsertionPointToStart(body);
  SmallVector<Value> arguments = {sharded.getInductionVar()};
  SmallVector<Value> wholeZeros(loop.getNumResults());
  for (unsigned i = 0, e = loop.getNumResults(); i < e; ++i) {
    if (chains.count(i)) {
      wholeZeros[i] =
          zerosLike(rewriter, loc, loop.getRegionIterArgs()[i].getType());
      arguments.push_back(wholeZeros[i]);
    } else {
      arguments.push_back(sharded.getRegionIterArgs()[i]);
    }
  }
  rewriter.mergeBlocks(loop.getBody(), body, arguments);
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  for (auto &[i, chain] : chains) {
    sinkZeros(wholeZeros[i]);
    // Reduce-scattered once the micro-batch's gradient is final, then added
    // to the shard.
    Value gradient = yield.getOperand(i);
    setAfterDefinition(rewriter, gradient, body, yield);
    Value shard = cloneChain(rewriter, chain, gradient);
    // In place into the loop's accumulator (so that it stays one buffer
    // across the micro-batches): acc += shard.
    auto type = cast<RankedTensorType>(shard.getType());
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    Value sum = linalg::GenericOp::create(
                    rewriter, loc, TypeRange{type}, ValueRange{shard},
                    ValueRange{sharded.getRegionIterArgs()[i]},
                    ArrayRef<AffineMap>{identity, identity},
                    SmallVector<utils::IteratorType>(
                        type.getRank(), utils::IteratorType::parallel),
                    [](OpBuilder &b, Location l, ValueRange args) {
                      Value add = arith::AddFOp::create(b, l, args[1], args[0]);
                      linalg::YieldOp::create(b, l, add);
                    })
                    .getResult(0);
    yield->setOperand(i, sum);
  }
  for (unsigned i = 0, e = loop.getNumResults(); i < e; ++i) {
    if (chains.count(i))
      chains[i].ops.back()->getResult(0).replaceAllUsesWith(
          sharded.getResult(i));
    else
      loop.getResult(i).replaceAllUsesWith(sharded.getResult(i));
  }
  for (auto &[i, chain] : chains)
    eraseChain(chain);
  // Its body is the new loop's now; its inits (the whole zeros) go with it.
  eraseWithDeadProducers(loop);
  return true;
}

/// A reduce-scatter of a value made in its block moves right after it; the
/// zeros the value accumulates from move to their first reader.
void scatterWhenFinal(ReduceScatterOp scatter) {
  FailureOr<ScatterChain> chain = chainOf(scatter);
  if (failed(chain))
    return;
  Block *block = scatter->getBlock();
  Operation *def = chain->source.getDefiningOp();
  if (!def || def->getBlock() != block)
    return;
  if (Value zeros = accumulatedFrom(chain->source))
    if (zeros.getDefiningOp()->getBlock() == block)
      sinkZeros(zeros);
  // Already there: the chain follows the definition.
  Operation *expected = def->getNextNode();
  bool inPlace = true;
  for (Operation *op : chain->ops) {
    inPlace &= op == expected;
    expected = op->getNextNode();
  }
  if (inPlace)
    return;
  // What the chain reads besides its own values must be there before.
  for (Operation *op : chain->ops)
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (producer && producer->getBlock() == block && producer != def &&
          !llvm::is_contained(chain->ops, producer) &&
          !producer->isBeforeInBlock(def))
        return;
    }
  OpBuilder b(scatter->getContext());
  b.setInsertionPointAfter(def);
  Value shard = cloneChain(b, *chain, chain->source);
  scatter.getResult().replaceAllUsesWith(shard);
  eraseChain(*chain);
}

struct TrainShardAccumulatorsPass
    : ga::impl::TrainShardAccumulatorsPassBase<TrainShardAccumulatorsPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return;
    Block *entry = &fn.getBody().front();
    if (microbatchShards)
      for (auto loop : llvm::make_early_inc_range(entry->getOps<scf::ForOp>()))
        shardLoopAccumulators(loop, onlyWhereSmaller);
    // The last first: scatters of values made by one operation (a loop)
    // keep their order after it.
    SmallVector<ReduceScatterOp> scatters(entry->getOps<ReduceScatterOp>());
    for (ReduceScatterOp scatter : llvm::reverse(scatters))
      scatterWhenFinal(scatter);
  }
};

} // namespace
