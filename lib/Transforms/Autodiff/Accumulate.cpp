//===- Accumulate.cpp - train.accumulate with explicit accumulators -------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The rewrite of an implicit train.accumulate (a micro-batch loop whose body
// yields a loss) into explicit accumulators: the loss's final scaling peeled
// into the finalize region where it is linear (a vector of batch sums
// reduced to the loss is accumulated as a vector and reduced there), the
// gradients of the body accumulated by the sweep (Differentiate.cpp) into
// accumulators of their own, and the finalize region that scales them once.
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"
#include "ga/Analysis/Decomposability.h"
#include "ga/Transforms/Autodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "train/TrainOps.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace ga::train;
using namespace ga::ad;

namespace {
/// The final scaling of the loss, applied once to the accumulated values in
/// the finalize region: a tree of 0-d generics, linear in the values at its
/// leaves that the body computes, with factors that are the same in every
/// micro-batch (parameters and globals).
struct LossScaling {
  /// The generics, producers first; the last one yields the loss.
  SmallVector<linalg::GenericOp> tree;
  /// The values computed by the body that the tree reads: each gets its own
  /// accumulator. Held as the tree's operands that read them, which stay
  /// valid when differentiation replaces their producers (it generalizes
  /// named ops).
  SmallVector<OpOperand *> leaves;
  /// The constants that the tree's bodies read from outside them (a
  /// sequence length, a batch size): cloned into the finalize region with
  /// the tree.
  llvm::SetVector<Operation *> constants;
  /// The body's values that hold examples (examplesAlong): never a leaf
  /// under a reduction, whose sum over them must stay in the body.
  DenseMap<Value, int64_t> examples;
  Value leaf(unsigned i) const { return leaves[i]->get(); }
};
} // namespace

/// The values of the micro-batch body that hold the micro-batch's examples
/// along a dimension (the batch operands' dimension 0, followed through
/// structured ops whose loop over it is parallel and through reshapes and
/// slices), each with that dimension. A sum over the batch is not one of
/// them. Where the dimension is lost track of, a value counts as holding
/// examples (the scaling then accumulates it as before).
static DenseMap<Value, int64_t> examplesAlong(AccumulateOp acc) {
  DenseMap<Value, int64_t> along;
  for (Value arg : acc.getBatchArgs())
    along[arg] = 0;
  acc.getBody().front().walk([&](Operation *op) {
    std::optional<int64_t> dim;
    bool reads = false;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      for (OpOperand &operand : op->getOpOperands()) {
        auto it = along.find(operand.get());
        if (it == along.end())
          continue;
        reads = true;
        AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
        auto loop = dyn_cast<AffineDimExpr>(map.getResult(it->second));
        if (!loop) {
          dim = 0; // lost track
          break;
        }
        if (linalgOp.getIteratorTypesArray()[loop.getPosition()] !=
            utils::IteratorType::parallel)
          continue; // summed over the examples
        AffineMap out =
            linalgOp.getMatchingIndexingMap(linalgOp.getDpsInitOperand(0));
        std::optional<unsigned> position = out.getResultPosition(
            getAffineDimExpr(loop.getPosition(), op->getContext()));
        dim = position ? *position : 0;
      }
    } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      auto it = along.find(collapse.getSrc());
      if ((reads = it != along.end()))
        for (auto [g, group] :
             llvm::enumerate(collapse.getReassociationIndices()))
          if (llvm::is_contained(group, it->second))
            dim = g;
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      auto it = along.find(expand.getSrc());
      if ((reads = it != along.end()))
        dim = expand.getReassociationIndices()[it->second].front();
    } else {
      for (Value v : op->getOperands())
        if (along.count(v))
          reads = true;
      dim = 0; // slices, pads, concatenations: kept where they were
    }
    if (!reads || !dim)
      return;
    for (Value r : op->getResults())
      if (auto type = dyn_cast<RankedTensorType>(r.getType());
          type && type.getRank() > *dim)
        along[r] = *dim;
  });
  return along;
}

/// A generic of the loss's scaling: one result, read once, either without
/// reductions and with a tensor.empty init, or an additive reduction from
/// zeros (a sum over positions of a sum over the batch's rows).
static linalg::GenericOp scalingGeneric(Value v) {
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || !v.hasOneUse() || generic.getNumDpsInits() != 1 ||
      generic.getNumResults() != 1)
    return {};
  Value init = generic.getDpsInits()[0];
  if (generic.getNumReductionLoops() == 0)
    return init.getDefiningOp<tensor::EmptyOp>() ? generic
                                                 : linalg::GenericOp();
  if (ga::isZeroTensor(init) && ga::isAdditiveReduction(generic, 0))
    return generic;
  return {};
}

/// Whether `v` is a sum that its accumulator can continue in place, in the
/// full batch's order of terms (continueSum): an additive reduction from
/// zeros, or a cross-entropy sum.
static bool continuable(Value v) {
  if (auto ce = v.getDefiningOp<CrossEntropyOp>())
    return v == ce.getLoss() && ce.getReduction() == Reduction::Sum &&
           !ce.getInit();
  auto linalgOp = v.getDefiningOp<linalg::LinalgOp>();
  if (!linalgOp)
    return false;
  unsigned j = cast<OpResult>(v).getResultNumber();
  return ga::isZeroTensor(linalgOp.getDpsInits()[j]) &&
         ga::isAdditiveReduction(linalgOp, j);
}

/// Adds `generic` and the scaling generics it reads to `scaling`. Under a
/// reduction (`sums`: a sum over positions of a vector of batch sums) each
/// leaf must be a sum its accumulator continues, so that the vector is
/// accumulated as a vector in the full batch's order and reduced once,
/// after the micro-batches.
static bool collectScaling(linalg::GenericOp generic, AccumulateOp acc,
                           LossScaling &scaling, bool sums = false) {
  sums |= generic.getNumReductionLoops() != 0;
  // It is cloned into the finalize region: its body may read only its own
  // values and constants (cloned with it).
  bool captures = false;
  generic.getBlock()->walk([&](Operation *nested) {
    for (Value v : nested->getOperands()) {
      if (generic->isAncestor(v.getParentBlock()->getParentOp()))
        continue;
      Operation *def = v.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>())
        scaling.constants.insert(def);
      else
        captures = true;
    }
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
    if (linalg::GenericOp producer = scalingGeneric(v)) {
      // A producer that is not part of the scaling is a leaf.
      size_t tree = scaling.tree.size(), leaves = scaling.leaves.size();
      llvm::SetVector<Operation *> constants = scaling.constants;
      if (collectScaling(producer, acc, scaling, sums))
        continue;
      scaling.tree.truncate(tree);
      scaling.leaves.truncate(leaves);
      scaling.constants = constants;
    }
    // One accumulator per leaf: a value read twice is not peeled.
    if (llvm::any_of(scaling.leaves,
                     [&](OpOperand *leaf) { return leaf->get() == v; }) ||
        (sums && (!continuable(v) || scaling.examples.count(v))))
      return false;
    scaling.leaves.push_back(input);
  }
  // Linear in the terms computed by the body, by the analysis's own rule:
  // summed over the micro-batches, it gives its value on the summed terms.
  // A reduction's init (zeros) holds a partial sum of the same terms.
  std::string why;
  llvm::SmallDenseSet<Value> accumulators;
  if (generic.getNumReductionLoops() != 0)
    accumulators.insert(
        generic.getBlock()->getArgument(generic.getNumDpsInputs()));
  if (terms.empty() || ga::bodyLinearity(generic, terms, accumulators, why) !=
                           ga::Linearity::Proportional)
    return false;
  scaling.tree.push_back(generic);
  return true;
}

/// If `loss` is computed by generics that are linear in the values the
/// body computes that they read, with factors that are the same in every
/// micro-batch (a sum divided by a global count; two such quotients added,
/// one per mask; a sum over positions of per-position sums over the batch,
/// each divided by the batch size), returns them: their inputs are accumulated
/// over the micro-batches and the generics run once, on the accumulated values,
/// as in the full-batch step.
static std::optional<LossScaling> peelableScale(Value loss, AccumulateOp acc) {
  linalg::GenericOp root = scalingGeneric(loss);
  LossScaling scaling;
  scaling.examples = examplesAlong(acc);
  if (!root || !collectScaling(root, acc, scaling))
    return std::nullopt;
  return scaling;
}

/// The next value of `acc` when the body computes the sum `v` (a loss term
/// or a metric) that nothing else reads: the sum itself, started from the
/// accumulator, where it is a cross-entropy sum (its init) or an additive
/// reduction from zeros (the analysis's rule); `acc + v` otherwise.
static Value continueSum(OpBuilder &b, Location loc, Value v, Value acc,
                         bool alone) {
  if (!alone || v.getType() != acc.getType() || !continuable(v))
    return addInto(b, loc, acc, v);
  if (auto ce = v.getDefiningOp<CrossEntropyOp>())
    ce.getInitMutable().assign(acc);
  else
    v.getDefiningOp<linalg::LinalgOp>()
        .getDpsInitsMutable()[cast<OpResult>(v).getResultNumber()]
        .set(acc);
  return v;
}

/// A linalg.generic that copies its one input to its result through
/// permutations (a transpose written as a generic).
static bool isPermutingCopy(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0)
    return false;
  for (AffineMap map : generic.getIndexingMapsArray())
    if (!map.isPermutation())
      return false;
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  return yield.getValues().size() == 1 &&
         yield.getValues()[0] == generic.getBody()->getArgument(0);
}

bool ga::ad::matchReductionThroughLayouts(
    Value contribution, OpOperand *&init,
    SmallVectorImpl<Operation *> &layouts) {
  // The layout operations from the contribution back to the reduction,
  // each read once; the ones with an init (transposes) write an empty one.
  SmallVector<Operation *> chain;
  Value v = contribution;
  while (Operation *def = v.getDefiningOp()) {
    if (!v.use_empty() && !v.hasOneUse())
      break;
    Value source;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
      source = collapse.getSrc();
    else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
      source = expand.getSrc();
    else if (auto transpose = dyn_cast<linalg::TransposeOp>(def);
             transpose && transpose.getInit().getDefiningOp<tensor::EmptyOp>())
      source = transpose.getInput();
    else if (auto generic = dyn_cast<linalg::GenericOp>(def);
             generic && isPermutingCopy(generic) &&
             generic.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
      source = generic.getInputs()[0];
    else
      break;
    chain.push_back(def);
    v = source;
  }
  auto reduction = v.getDefiningOp<linalg::LinalgOp>();
  if (chain.empty() || !reduction || !v.hasOneUse() ||
      !reduction.hasPureTensorSemantics())
    return false;
  unsigned j = cast<OpResult>(v).getResultNumber();
  OpOperand &zeros = reduction.getDpsInitsMutable()[j];
  if (!ga::isZeroTensor(zeros.get()) || !ga::isAdditiveReduction(reduction, j))
    return false;
  init = &zeros;
  layouts.assign(chain.rbegin(), chain.rend());
  return true;
}

/// The gradient of one accumulation in the finalize region (`toFinal` maps
/// the accumulator): the accumulated value, through its layout operations
/// when it was accumulated in a reduction's layout.
static Value finishAccumulation(OpBuilder &fb, const Sweep::Accumulation &a,
                                IRMapping &toFinal) {
  Value v = toFinal.lookup(a.accumulator);
  if (a.layouts.empty())
    return v;
  IRMapping m;
  m.map(a.next, v);
  for (Operation *layout : a.layouts) {
    for (Value operand : layout->getOperands())
      if (!m.contains(operand))
        if (auto empty = operand.getDefiningOp<tensor::EmptyOp>())
          m.map(operand, fb.clone(*empty)->getResult(0));
    fb.clone(*layout, m);
  }
  return m.lookup(a.layouts.back()->getResult(0));
}

/// Erases the operations of `block` that nothing reads and that have no
/// effects (what the accumulators superseded).
static void eraseDeadOps(Block &block) {
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
      if (&op != block.getTerminator() && isOpTriviallyDead(&op)) {
        op.erase();
        erased = true;
      }
  }
}

namespace {
/// Makes a train.accumulate in its contribution form explicit, in phases:
/// the accumulators of the loss terms, the sweep with initial adjoints
/// (the gradients' accumulators), the metrics' accumulators, the finalize
/// region, and the body's next values.
class ExplicitAccumulation {
public:
  explicit ExplicitAccumulation(AccumulateOp op)
      : op(op), body(op.getBody().front()), yield(op.getYield()), outside(op),
        loc(op.getLoc()), numMetrics(op.getMetrics().size()) {}

  LogicalResult run() {
    // The loss's final scaling, found before the sweep adds readers.
    peel = peelableScale(yield.getValues().front(), op);
    // The loss terms' accumulators first (the loss comes first everywhere).
    if (peel)
      for (unsigned i = 0; i < peel->leaves.size(); ++i)
        termAccs.push_back(newAccumulator(peel->leaf(i).getType()));
    else
      termAccs.push_back(newAccumulator(yield.getValues().front().getType()));
    if (failed(accumulateGradients()))
      return failure();
    // Read after the sweep, which may have replaced their producers.
    if (peel)
      for (unsigned i = 0; i < peel->leaves.size(); ++i)
        lossTerms.push_back(peel->leaf(i));
    else
      lossTerms.push_back(yield.getValues().front());
    llvm::append_range(metrics, yield.getValues().take_back(numMetrics));
    for (Value m : metrics)
      metricAccs.push_back(newAccumulator(m.getType()));
    buildFinalize();
    continueSums();
    specializeContractions(op.getContext(), toSpecialize);
    eraseDeadOps(body);
    return success();
  }

private:
  /// A new accumulator: a zero operand, a body argument.
  Value newAccumulator(Type type) {
    op.getAccumulatorsMutable().append(ga::zerosLike(outside, loc, type));
    Value arg = body.addArgument(type, loc);
    accArgs.push_back(arg);
    return arg;
  }

  /// The gradients: the sweep gives each contribution its own accumulator
  /// to continue. A body that already yields its gradients adds each to an
  /// accumulator.
  LogicalResult accumulateGradients() {
    SmallVector<Value> paramArgs(op.getParamArgs());
    if (yield.getValues().size() == 1 + numMetrics) {
      if (failed(differentiateBody(
              op, body, paramArgs, yield.getValues().front(), toSpecialize,
              [this](Type type) { return newAccumulator(type); }, &gradAccs)))
        return failure();
    } else {
      OpBuilder b(yield);
      for (Value g : yield.getValues().slice(1, paramArgs.size())) {
        Value acc = newAccumulator(g.getType());
        SmallVector<Sweep::Accumulation> one;
        one.push_back(Sweep::Accumulation{acc, addInto(b, loc, acc, g)});
        gradAccs.push_back(std::move(one));
      }
    }
    for (ArrayRef<Sweep::Accumulation> accs : gradAccs)
      for (const Sweep::Accumulation &a : accs)
        nextOf[a.accumulator] = a.next;
    return success();
  }

  /// The finalize region: the loss (the scaling on the accumulated terms),
  /// each gradient (its accumulators added in the order of its
  /// contributions, as the full batch adds them), the metrics.
  void buildFinalize() {
    Block *finalize = new Block();
    op.getFinalize().push_back(finalize);
    IRMapping toFinal;
    for (Value acc : accArgs)
      toFinal.map(acc, finalize->addArgument(acc.getType(), loc));
    for (Value arg : op.getParamArgs())
      toFinal.map(arg, finalize->addArgument(arg.getType(), loc));
    for (Value arg : op.getGlobalArgs())
      toFinal.map(arg, finalize->addArgument(arg.getType(), loc));
    OpBuilder fb = OpBuilder::atBlockEnd(finalize);
    SmallVector<Value> results;
    if (peel) {
      for (auto [leaf, acc] : llvm::zip(lossTerms, termAccs))
        toFinal.map(leaf, toFinal.lookup(acc));
      for (Operation *constant : peel->constants)
        fb.clone(*constant, toFinal);
      Value scaled;
      for (linalg::GenericOp generic : peel->tree) {
        auto type = cast<RankedTensorType>(generic.getResult(0).getType());
        toFinal.map(generic.getDpsInits()[0],
                    generic.getNumReductionLoops() != 0
                        ? ga::zerosLike(fb, loc, type)
                        : tensor::EmptyOp::create(fb, loc, type.getShape(),
                                                  type.getElementType())
                              .getResult());
        scaled = fb.clone(*generic, toFinal)->getResult(0);
      }
      results.push_back(scaled);
    } else {
      results.push_back(toFinal.lookup(termAccs.front()));
    }
    for (auto [param, accs] : llvm::zip(op.getParamArgs(), gradAccs)) {
      Value grad;
      for (const Sweep::Accumulation &a : accs) {
        Value part = finishAccumulation(fb, a, toFinal);
        grad = grad ? addTensors(fb, loc, grad, part) : part;
      }
      results.push_back(grad ? grad : ga::zerosLike(fb, loc, param.getType()));
    }
    for (Value acc : metricAccs)
      results.push_back(toFinal.lookup(acc));
    YieldOp::create(fb, loc, results);
  }

  /// The body's next values: the loss terms and the metrics continue their
  /// accumulators, once the old yield and the scaling (now in finalize) no
  /// longer read them.
  void continueSums() {
    yield->setOperands(ValueRange{});
    // (An adjoint that still reads a generic of the scaling keeps it.)
    if (peel)
      for (linalg::GenericOp generic : llvm::reverse(peel->tree))
        if (generic->use_empty())
          generic.erase();
    SmallVector<Value> sums(lossTerms);
    llvm::append_range(sums, metrics);
    SmallVector<Value> sumAccs(termAccs);
    llvm::append_range(sumAccs, metricAccs);
    OpBuilder b(yield);
    for (auto [v, acc] : llvm::zip(sums, sumAccs)) {
      bool alone =
          v.use_empty() && llvm::count(sums, v) == 1 && !isa<BlockArgument>(v);
      nextOf[acc] = continueSum(b, loc, v, acc, alone);
    }
    // An accumulator that a rule took but did not continue stays as it is.
    SmallVector<Value> next;
    for (Value acc : accArgs)
      next.push_back(nextOf.lookup(acc) ? nextOf.lookup(acc) : acc);
    yield->setOperands(next);
  }

  AccumulateOp op;
  Block &body;
  YieldOp yield;
  OpBuilder outside;
  Location loc;
  unsigned numMetrics;
  std::optional<LossScaling> peel;
  /// Every accumulator's body argument, in the order of the operands.
  SmallVector<Value> accArgs;
  DenseMap<Value, Value> nextOf;
  SmallVector<Value> termAccs, metricAccs, lossTerms, metrics;
  SmallVector<SmallVector<Sweep::Accumulation>> gradAccs;
  SmallVector<linalg::GenericOp> toSpecialize;
};
} // namespace

LogicalResult ga::differentiateAccumulate(AccumulateOp op) {
  if (op.isExplicit())
    return success();
  return ExplicitAccumulation(op).run();
}
