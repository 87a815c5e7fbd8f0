//===- TrainToSCF.cpp - train.accumulate to scf.for ----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A differentiated train.accumulate becomes an scf.for over the micro-batches
// whose iteration arguments are the running loss and gradients. Every value
// the body yields is accumulated *into* the running value where its producer
// allows it (accumulateInto): an additive reduction whose init is zero takes
// the accumulator as its init, a stacked gradient (insert_slice into zeros)
// does so slice by slice, an embedding scatter-add takes it as the init of its
// loop nest. Then each element is summed in the order of the full-batch step
// and no per-micro-batch gradient buffer exists.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/Decomposability.h"
#include "ga/Conversion/Passes.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/IR/IRMapping.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINLOWERACCUMULATEPASS
#include "ga/Conversion/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;
using ga::isZeroTensor;
using ga::zerosLike;

/// Makes `op` come after the definition of `v` if it does not already
/// (its only user is after both, see accumulateInto).
static void placeAfter(Operation *op, Value v, Operation *user) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != op->getBlock() || def->isBeforeInBlock(op))
    return;
  op->moveBefore(user);
}

static Value addInto(OpBuilder &b, Value g, Value acc, Operation *user);

/// For `insert(add(extract(D), c), D)` (both slices the same), returns c.
static Value sliceIncrement(tensor::InsertSliceOp insert) {
  Operation *add = insert.getSource().getDefiningOp();
  if (!add || !insert.getSource().hasOneUse() || add->getNumOperands() != 3)
    return {};
  auto generic = dyn_cast<linalg::LinalgOp>(add);
  if (!generic || generic.getNumDpsInputs() != 2 ||
      generic.getNumReductionLoops() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return {};
  Operation *yielded =
      generic.getBlock()->getTerminator()->getOperand(0).getDefiningOp();
  if (!yielded || !isa<arith::AddFOp>(yielded) ||
      yielded->getOperand(0) != generic.getBlock()->getArgument(0) ||
      yielded->getOperand(1) != generic.getBlock()->getArgument(1))
    return {};
  for (unsigned i = 0; i < 2; ++i) {
    auto extract =
        generic.getDpsInputs()[i].getDefiningOp<tensor::ExtractSliceOp>();
    if (extract && extract.getSource() == insert.getDest() &&
        extract->hasOneUse() &&
        extract.getMixedOffsets() == insert.getMixedOffsets() &&
        extract.getMixedSizes() == insert.getMixedSizes() &&
        extract.getMixedStrides() == insert.getMixedStrides() &&
        extract.getType() == insert.getSourceType() &&
        generic.getDpsInputs()[1 - i].hasOneUse())
      return generic.getDpsInputs()[1 - i];
  }
  return {};
}

/// Whether every iteration of `loop` adds into its carried value `j`: the
/// iteration argument is read only as the init of an additive reduction
/// whose result is yielded as the next value (ga-chunk-loss-head's weight
/// gradient over chunks of rows). Its result is then the init plus the
/// same additions, in the same order, whatever the init.
static bool addsIntoCarried(scf::ForOp loop, unsigned j) {
  BlockArgument carried = loop.getRegionIterArgs()[j];
  if (!carried.hasOneUse())
    return false;
  auto op = dyn_cast<linalg::LinalgOp>(carried.use_begin()->getOwner());
  if (!op || op->getNumResults() != 1 || op.getNumDpsInits() != 1 ||
      op.getDpsInits()[0] != carried || !ga::isAdditiveReduction(op, 0))
    return false;
  Value next = loop.getBody()->getTerminator()->getOperand(j);
  return next == op->getResult(0) && next.hasOneUse();
}

/// The zero init of `g`'s producer that an accumulator may replace, so that
/// the producer continues the accumulator in place: an additive reduction
/// from zero, or a loop that adds into its zero init (an embedding's
/// scatter-add). Null otherwise.
static OpOperand *continuableInit(Value g) {
  if (auto linalgOp = g.getDefiningOp<linalg::LinalgOp>()) {
    unsigned j = cast<OpResult>(g).getResultNumber();
    OpOperand &init = linalgOp.getDpsInitsMutable()[j];
    if (isZeroTensor(init.get()) && ga::isAdditiveReduction(linalgOp, j))
      return &init;
  }
  if (auto loop = g.getDefiningOp<scf::ForOp>()) {
    if (loop->hasAttr(ga::kAccumulatesIntoInit) && loop.getNumResults() == 1 &&
        isZeroTensor(loop.getInitArgs()[0]))
      return &loop.getInitArgsMutable()[0];
    unsigned j = cast<OpResult>(g).getResultNumber();
    if (isZeroTensor(loop.getInitArgs()[j]) && addsIntoCarried(loop, j))
      return &loop.getInitArgsMutable()[j];
  }
  return nullptr;
}

/// Returns `acc + g`, computed in place into `acc` where the producer of `g`
/// allows it. New operations go before `user`, the only user of `g` (with
/// `sliceUpdate`, `g` is the D of a slice update, see sliceIncrement, and
/// has two users).
static Value accumulateInto(OpBuilder &b, Value g, Value acc, Operation *user,
                            bool sliceUpdate = false) {
  Location loc = g.getLoc();
  if (isZeroTensor(g))
    return acc;
  bool single = g.hasOneUse();
  if (sliceUpdate && !single) {
    auto insert = dyn_cast<tensor::InsertSliceOp>(user);
    single =
        insert && sliceIncrement(insert) &&
        llvm::count_if(g.getUsers(), [](Operation *) { return true; }) == 2;
  }
  if (single) {
    OpOperand *init = continuableInit(g);
    if (init && init->get().getType() == acc.getType()) {
      init->set(acc);
      placeAfter(init->getOwner(), acc, user);
      return g;
    }
    if (auto insert = g.getDefiningOp<tensor::InsertSliceOp>()) {
      // The adjoint of an extract_slice adds into a slice of the gradient
      // so far: insert(extract(D) + c, D). Then acc + g is D accumulated
      // into acc, with c accumulated into its slice.
      Value increment = sliceIncrement(insert);
      if (!increment && !insert.getDest().hasOneUse() &&
          !isZeroTensor(insert.getDest()))
        return addInto(b, g, acc, user);
      Value dest = isZeroTensor(insert.getDest())
                       ? acc
                       : accumulateInto(b, insert.getDest(), acc, insert,
                                        /*sliceUpdate=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(insert);
      Value part = tensor::ExtractSliceOp::create(
          b, loc, insert.getSourceType(), dest, insert.getMixedOffsets(),
          insert.getMixedSizes(), insert.getMixedStrides());
      Value source = accumulateInto(
          b, increment ? increment : insert.getSource(), part, insert);
      b.setInsertionPoint(insert);
      return tensor::InsertSliceOp::create(
          b, loc, source, dest, insert.getMixedOffsets(),
          insert.getMixedSizes(), insert.getMixedStrides());
    }
  }
  return addInto(b, g, acc, user);
}

/// `acc + g` as an elementwise addition before `user`. The accumulator is
/// read through the init only: a tiled (or outlined) update then reads and
/// writes the same slice of one buffer, which bufferizes in place.
static Value addInto(OpBuilder &b, Value g, Value acc, Operation *user) {
  Location loc = g.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(user);
  auto type = cast<RankedTensorType>(acc.getType());
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  bool isFloat = isa<FloatType>(type.getElementType());
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{g}, acc, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               // args: g, then the accumulator; the sum is acc + g.
               Value sum =
                   isFloat ? arith::AddFOp::create(nb, nloc, args[1], args[0])
                                 .getResult()
                           : arith::AddIOp::create(nb, nloc, args[1], args[0])
                                 .getResult();
               linalg::YieldOp::create(nb, nloc, sum);
             })
      .getResult(0);
}

namespace {
/// The final scaling of the loss that train-lower-accumulate applies once,
/// after the loop: a tree of 0-d generics, linear in the loop-computed
/// values at its leaves, with factors computed before the loop.
struct LossScaling {
  /// The generics, producers first; the last one yields the loss.
  SmallVector<linalg::GenericOp> tree;
  /// The values computed in the loop that the tree reads: each gets its own
  /// accumulator.
  SmallVector<Value> leaves;
};
} // namespace

/// A 0-d generic with one result, read once, whose init is a tensor.empty.
static linalg::GenericOp scalarGeneric(Value v) {
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || !v.hasOneUse() || generic.getNumLoops() != 0 ||
      generic.getNumDpsInits() != 1 ||
      !generic.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    return {};
  return generic;
}

static bool collectScaling(linalg::GenericOp generic, AccumulateOp acc,
                           LossScaling &scaling) {
  // It is cloned after the loop: its body may read only its own values.
  bool captures = false;
  generic.getBlock()->walk([&](Operation *nested) {
    for (Value v : nested->getOperands())
      captures |= !generic->isAncestor(v.getParentBlock()->getParentOp());
  });
  if (captures)
    return false;
  llvm::SmallDenseSet<Value> terms;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    // The body is isolated: a value is the same in every micro-batch exactly
    // when it is a parameter or a global.
    Value v = input->get();
    if (isa<BlockArgument>(v) && !llvm::is_contained(acc.getBatchArgs(), v))
      continue;
    terms.insert(generic.getBlock()->getArgument(input->getOperandNumber()));
    if (linalg::GenericOp producer = scalarGeneric(v)) {
      if (!collectScaling(producer, acc, scaling))
        return false;
      continue;
    }
    // One accumulator per leaf: a value read twice is not peeled.
    if (llvm::is_contained(scaling.leaves, v))
      return false;
    scaling.leaves.push_back(v);
  }
  // Linear in the loop-computed terms, by the analysis's own rule: summed
  // over the micro-batches, it gives its value on the summed terms.
  std::string why;
  if (terms.empty() ||
      ga::bodyLinearity(generic, terms, {}, why) != ga::Linearity::Proportional)
    return false;
  scaling.tree.push_back(generic);
  return true;
}

/// If `loss` is computed by 0-d generics that are linear in the values
/// computed in the loop that they read, with factors computed before it (a
/// sum divided by a global count; two such quotients added, one per mask),
/// returns them: their loop-computed inputs are accumulated over the
/// micro-batches and the generics are applied once, after the loop, to the
/// accumulated values, as in the full-batch step.
static std::optional<LossScaling> peelableScale(Value loss, AccumulateOp acc) {
  linalg::GenericOp root = scalarGeneric(loss);
  LossScaling scaling;
  if (!root || !collectScaling(root, acc, scaling))
    return std::nullopt;
  return scaling;
}

/// A gradient that is a sum of contributions that each accumulate in place
/// (a parameter read by several operations: differentiation keeps their
/// reductions apart and adds them): each contribution gets its own
/// accumulator, and the additions run once, after the loop, on the
/// accumulated contributions, as in the full-batch step.
struct GradientTree {
  /// The additions, producers first.
  SmallVector<linalg::LinalgOp> adds;
  SmallVector<Value> leaves;
};

/// A single-use `g` whose producer continues an accumulator in place.
static bool accumulatesInPlace(Value g) {
  return g.hasOneUse() && continuableInit(g);
}

/// `out = in0 + in1` elementwise on floats (linalg.add or its generic form),
/// its init not read.
static bool isElementwiseAdd(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1 || op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block *block = op.getBlock();
  if (!block || block->getNumArguments() != 3 ||
      !block->getArgument(2).use_empty())
    return false;
  auto add =
      block->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  return add && add->getBlock() == block &&
         add.getLhs() == block->getArgument(0) &&
         add.getRhs() == block->getArgument(1);
}

static void collectGradientTree(Value v, GradientTree &tree) {
  auto add = v.getDefiningOp<linalg::LinalgOp>();
  if (add && v.hasOneUse() && isElementwiseAdd(add)) {
    collectGradientTree(add.getDpsInputs()[0], tree);
    collectGradientTree(add.getDpsInputs()[1], tree);
    tree.adds.push_back(add);
    return;
  }
  tree.leaves.push_back(v);
}

static std::optional<GradientTree> peelableGradient(Value g) {
  GradientTree tree;
  collectGradientTree(g, tree);
  if (tree.adds.empty() || !llvm::all_of(tree.leaves, accumulatesInPlace))
    return std::nullopt;
  llvm::SmallDenseSet<Value> distinct(tree.leaves.begin(), tree.leaves.end());
  if (distinct.size() != tree.leaves.size())
    return std::nullopt;
  return tree;
}

/// The first operation of `body` that a later pass of the pipeline would
/// still have to lower or inline: lowering the loop around it would keep the
/// gradients from accumulating in place (convert-train-to-linalg and
/// train-inline-checkpoints must run first).
static Operation *findUnloweredTrainOp(Block &body) {
  Operation *found = nullptr;
  body.walk([&](Operation *nested) {
    if (isa<YieldOp>(nested) || !isa<TrainDialect>(nested->getDialect()))
      return WalkResult::advance();
    found = nested;
    return WalkResult::interrupt();
  });
  return found;
}

static LogicalResult lowerAccumulate(AccumulateOp op) {
  unsigned numParams = op.getParams().size();
  unsigned numMetrics = op.getMetrics().size();
  YieldOp yield = op.getYield();
  if (yield.getNumOperands() != 1 + numParams + numMetrics)
    return op.emitOpError()
           << "cannot be lowered before train-differentiate: its body yields "
              "the loss only, not the gradient contributions";
  if (Operation *unlowered = findUnloweredTrainOp(op.getBody().front())) {
    bool checkpoint = isa<CheckpointOp>(unlowered);
    InFlightDiagnostic diag =
        op.emitOpError()
        << "cannot be lowered while its body holds '" << unlowered->getName()
        << "': run "
        << (checkpoint ? "train-inline-checkpoints" : "convert-train-to-linalg")
        << " first, so that every gradient and metric is accumulated in "
           "place in the order of the full batch";
    diag.attachNote(unlowered->getLoc()) << "the operation still to lower";
    return diag;
  }
  int64_t k = static_cast<int64_t>(op.getMicrobatches());
  OpBuilder b(op);
  Location loc = op.getLoc();
  // The loss accumulator holds the value before the final scaling when the
  // loss is such a scaling.
  Block &body = op.getBody().front();
  std::optional<LossScaling> peel = peelableScale(yield.getOperand(0), op);
  SmallVector<Value> lossTerms =
      peel ? peel->leaves : SmallVector<Value>{yield.getOperand(0)};
  unsigned numTerms = lossTerms.size();
  SmallVector<Value> inits;
  for (Value term : lossTerms)
    inits.push_back(zerosLike(b, loc, term.getType()));
  // Gradients (not metrics) that are sums of in-place contributions keep
  // one accumulator per contribution.
  SmallVector<std::optional<GradientTree>> trees;
  for (auto [i, g] : llvm::enumerate(yield.getOperands().drop_front())) {
    trees.push_back(i < numParams ? peelableGradient(g) : std::nullopt);
    if (trees.back())
      for (Value leaf : trees.back()->leaves)
        inits.push_back(zerosLike(b, loc, leaf.getType()));
    else
      inits.push_back(zerosLike(b, loc, g.getType()));
  }

  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(b, loc, k);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, lb, ub, one, inits);
  Block *loopBody = loop.getBody();
  OpBuilder inner = OpBuilder::atBlockBegin(loopBody);
  IRMapping mapping;
  for (auto [arg, p] : llvm::zip(op.getParamArgs(), op.getParams()))
    mapping.map(arg, p);
  for (auto [arg, g] : llvm::zip(op.getGlobalArgs(), op.getGlobals()))
    mapping.map(arg, g);
  Value iv = loop.getInductionVar();
  for (auto [arg, full] : llvm::zip(op.getBatchArgs(), op.getBatch())) {
    auto micro = cast<RankedTensorType>(arg.getType());
    Value rows =
        arith::ConstantIndexOp::create(inner, loc, micro.getDimSize(0));
    Value offset = arith::MulIOp::create(inner, loc, iv, rows);
    SmallVector<OpFoldResult> offsets(micro.getRank(), inner.getIndexAttr(0));
    offsets[0] = offset;
    SmallVector<OpFoldResult> sizes,
        strides(micro.getRank(), inner.getIndexAttr(1));
    for (int64_t d : micro.getShape())
      sizes.push_back(inner.getIndexAttr(d));
    mapping.map(arg, tensor::ExtractSliceOp::create(inner, loc, micro, full,
                                                    offsets, sizes, strides)
                         .getResult());
  }
  for (Operation &nested : body.without_terminator())
    inner.clone(nested, mapping);
  auto newYield = scf::YieldOp::create(inner, loc, ValueRange{});
  SmallVector<Value> accumulated;
  SmallVector<Value> yielded;
  for (Value term : lossTerms)
    yielded.push_back(mapping.lookupOrDefault(term));
  // The loop's copy of the scaling is dead once the yield reads its leaves;
  // it goes before the leaves are accumulated, which needs them to have the
  // yield as their only user.
  SmallVector<Operation *> peeled;
  if (peel)
    for (linalg::GenericOp generic : llvm::reverse(peel->tree))
      peeled.push_back(mapping.lookup(generic.getOperation()));
  for (auto [g, tree] : llvm::zip(yield.getOperands().drop_front(), trees)) {
    if (!tree) {
      yielded.push_back(mapping.lookupOrDefault(g));
      continue;
    }
    for (Value leaf : tree->leaves)
      yielded.push_back(mapping.lookupOrDefault(leaf));
    for (linalg::LinalgOp add : llvm::reverse(tree->adds))
      peeled.push_back(mapping.lookup(add.getOperation()));
  }
  // The yield uses the values so that each has the terminator as its user.
  newYield->setOperands(yielded);
  for (Operation *dead : peeled)
    dead->erase();
  for (auto [value, acc] : llvm::zip(yielded, loop.getRegionIterArgs()))
    accumulated.push_back(accumulateInto(inner, value, acc, newYield));
  newYield->setOperands(accumulated);
  // The superseded zero-init producers and additions are dead now.
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &nested :
         llvm::make_early_inc_range(llvm::reverse(*loopBody)))
      if (&nested != newYield && nested.use_empty() && isPure(&nested)) {
        nested.erase();
        erased = true;
      }
  }

  // After the loop: the peeled scaling, then the results.
  b.setInsertionPointAfter(loop);
  Value loss = loop.getResult(0);
  if (peel) {
    IRMapping after;
    for (linalg::GenericOp generic : peel->tree) {
      for (OpOperand *input : generic.getDpsInputOperands())
        if (!after.contains(input->get()))
          after.map(input->get(), mapping.lookupOrDefault(input->get()));
      auto type = cast<RankedTensorType>(generic.getResult(0).getType());
      after.map(generic.getDpsInits()[0],
                tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType())
                    .getResult());
    }
    for (auto [j, leaf] : llvm::enumerate(peel->leaves))
      after.map(leaf, loop.getResult(j));
    for (linalg::GenericOp generic : peel->tree)
      loss = b.clone(*generic, after)->getResult(0);
  }
  op.getLoss().replaceAllUsesWith(loss);
  // The gradients and metrics; a peeled sum is added from its accumulated
  // contributions.
  unsigned next = numTerms;
  SmallVector<Value> values;
  for (auto [g, tree] : llvm::zip(yield.getOperands().drop_front(), trees)) {
    if (!tree) {
      values.push_back(loop.getResult(next++));
      continue;
    }
    IRMapping after;
    for (Value leaf : tree->leaves)
      after.map(leaf, loop.getResult(next++));
    Value sum;
    for (linalg::LinalgOp add : tree->adds) {
      auto type = cast<RankedTensorType>(add->getResult(0).getType());
      after.map(add.getDpsInits()[0],
                tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType())
                    .getResult());
      sum = b.clone(*add, after)->getResult(0);
      after.map(add->getResult(0), sum);
    }
    values.push_back(sum);
  }
  for (auto [result, value] : llvm::zip(op.getGrads(), values))
    result.replaceAllUsesWith(value);
  for (auto [result, value] : llvm::zip(
           op.getMetrics(), ArrayRef<Value>(values).drop_front(numParams)))
    result.replaceAllUsesWith(value);
  op.erase();
  return success();
}

namespace {
struct TrainLowerAccumulatePass
    : ga::impl::TrainLowerAccumulatePassBase<TrainLowerAccumulatePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<AccumulateOp> ops;
    getOperation()->walk([&](AccumulateOp op) { ops.push_back(op); });
    for (AccumulateOp op : ops)
      if (failed(lowerAccumulate(op)))
        return signalPassFailure();
  }
};
} // namespace
