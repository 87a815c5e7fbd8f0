//===- Differentiate.cpp - The reverse sweep and train-differentiate ------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The driver of reverse-mode differentiation: activity analysis (which
// values depend on a parameter), the backward sweep over a block with one
// adjoint accumulator per value, checkpoint recomputation, and the rewrite
// of train.step / train.accumulate.
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"
#include "ga/Analysis/Decomposability.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINDIFFERENTIATEPASS
#define GEN_PASS_DEF_TESTTRAINADJOINTNEEDSPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace ga::ad {

Value addTensors(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  Value empty = tensor::EmptyOp::create(
      b, loc, cast<RankedTensorType>(lhs.getType()), ValueRange{});
  return linalg::AddOp::create(b, loc, ValueRange{lhs, rhs}, ValueRange{empty})
      .getResult(0);
}

/// `acc + v` elementwise (integer or float), reading the accumulator
/// through the init: a tiled update then reads and writes the same slice of
/// one buffer, which bufferizes in place.
Value addInto(OpBuilder &b, Location loc, Value acc, Value v) {
  auto type = cast<RankedTensorType>(acc.getType());
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  bool isFloat = isa<FloatType>(type.getElementType());
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{v}, acc, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               // args: v, then the accumulator; the sum is acc + v.
               Value sum =
                   isFloat ? arith::AddFOp::create(nb, nloc, args[1], args[0])
                                 .getResult()
                           : arith::AddIOp::create(nb, nloc, args[1], args[0])
                                 .getResult();
               linalg::YieldOp::create(nb, nloc, sum);
             })
      .getResult(0);
}

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

void Sweep::propagateActivity(ArrayRef<Operation *> ops) {
  for (Operation *op : ops) {
    if (auto checkpoint = dyn_cast<CheckpointOp>(op)) {
      Block &body = checkpoint.getBody().front();
      for (auto [arg, input] :
           llvm::zip(body.getArguments(), checkpoint.getInputs()))
        if (isActive(input))
          markActive(arg);
      SmallVector<Operation *> inner;
      for (Operation &nested : body.without_terminator())
        inner.push_back(&nested);
      propagateActivity(inner);
      for (auto [result, yielded] : llvm::zip(
               checkpoint.getResults(), checkpoint.getYield().getValues()))
        if (isActive(yielded))
          markActive(result);
      continue;
    }
    // Operands, and values that nested bodies read from above.
    bool active = false;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        active |= isActive(operand);
    });
    if (!active)
      continue;
    for (Value result : op->getResults())
      if (isFloatTensor(result.getType()))
        markActive(result);
  }
}

void Sweep::addAdjoint(Location loc, Value v, Value contribution) {
  if (!isActive(v))
    return;
  if (accumulating() && separateContributions.contains(v)) {
    // Not a reduction this sweep could continue: added to an accumulator
    // of its own.
    Value acc = newAccumulator(v.getType());
    accumulations[v].push_back({acc, addInto(builder, loc, acc, contribution)});
    return;
  }
  Value &slot = adjoints[v];
  if (!slot) {
    slot = contribution;
    return;
  }
  slot = addTensors(builder, loc, slot, contribution);
}

Value Sweep::adjointToContinue(Value v) {
  if (!separateContributions.contains(v))
    return getAdjoint(v);
  if (!accumulating() || !isActive(v))
    return Value();
  Value acc = newAccumulator(v.getType());
  continuing[v] = acc;
  return acc;
}

void Sweep::setAdjoint(Value v, Value adjoint) {
  if (accumulating() && separateContributions.contains(v)) {
    Value acc = continuing.lookup(v);
    if (!acc) {
      // A rule that set it without continuing it: getAdjoint(v) is null
      // here, so `adjoint` is this contribution alone.
      addAdjoint(adjoint.getLoc(), v, adjoint);
      return;
    }
    continuing.erase(v);
    accumulations[v].push_back({acc, adjoint});
    return;
  }
  adjoints[v] = adjoint;
}

void Sweep::addIntoSlice(Location loc, Value source, Value dy,
                         tensor::ExtractSliceOp slice) {
  if (!isActive(source))
    return;
  OpBuilder &b = builder;
  auto insertInto = [&](Value part, Value dest) {
    return tensor::InsertSliceOp::create(
               b, loc, part, dest, slice.getMixedOffsets(),
               slice.getMixedSizes(), slice.getMixedStrides())
        .getResult();
  };
  auto extractFrom = [&](Value whole) {
    return tensor::ExtractSliceOp::create(
               b, loc, slice.getResultType(), whole, slice.getMixedOffsets(),
               slice.getMixedSizes(), slice.getMixedStrides())
        .getResult();
  };
  if (accumulating() && separateContributions.contains(source)) {
    // The slices of a stacked parameter share one accumulator. A slice's
    // adjoint that one reduction computed from zeros is computed into the
    // accumulator's slice instead: the reduction moves here, after the
    // slice is taken (nothing else reads its result yet).
    auto [it, fresh] =
        sliceAccumulation.try_emplace(source, accumulations[source].size());
    if (fresh) {
      Value acc = newAccumulator(source.getType());
      accumulations[source].push_back({acc, acc});
    }
    Accumulation &entry = accumulations[source][it->second];
    Value part = extractFrom(entry.next);
    OpOperand *zeros = zeroInits.lookup(dy);
    Operation *producer = dy.getDefiningOp();
    if (zeros && producer && dy.use_empty() && zeros->getOwner() == producer &&
        isZeroTensor(zeros->get()) &&
        zeros->get().getType() == part.getType()) {
      producer->moveAfter(part.getDefiningOp());
      zeros->set(part);
      entry.next = insertInto(dy, entry.next);
      return;
    }
    entry.next = insertInto(addInto(b, loc, part, dy), entry.next);
    return;
  }
  Value acc = getAdjoint(source);
  if (!acc) {
    setAdjoint(source, insertInto(dy, zerosLike(b, loc, source.getType())));
    return;
  }
  setAdjoint(source, insertInto(addTensors(b, loc, extractFrom(acc), dy), acc));
}

/// Recomputes the body of `checkpoint` at the sweep's position from its
/// inputs and sweeps the recomputed operations backwards. The recomputed
/// values read the checkpoint's inputs directly, so their adjoints flow into
/// the inputs' accumulators in the same order as without the checkpoint.
LogicalResult adjointCheckpoint(Operation *op, Sweep &sweep) {
  auto checkpoint = cast<CheckpointOp>(op);
  Block &body = checkpoint.getBody().front();
  IRMapping map;
  map.map(body.getArguments(), checkpoint.getInputs());
  SmallVector<Operation *> recomputed;
  for (Operation &op : body.without_terminator())
    recomputed.push_back(sweep.builder.clone(op, map));
  sweep.propagateActivity(recomputed);
  for (auto [result, yielded] :
       llvm::zip(checkpoint.getResults(), checkpoint.getYield().getValues()))
    if (Value adjoint = sweep.getAdjoint(result))
      sweep.addAdjoint(checkpoint.getLoc(), map.lookupOrDefault(yielded),
                       adjoint);
  return sweep.reverse(recomputed);
}

LogicalResult Sweep::reverse(ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return bool(getAdjoint(r)); }))
      continue;
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable)
      return op->emitOpError()
             << "cannot be differentiated: train-differentiate has no "
                "adjoint rule for it, and it lies between the parameters and "
                "the loss";
    if (failed(differentiable.buildAdjoint(*this)))
      return failure();
  }
  return success();
}

} // namespace ga::ad

using namespace ga::ad;

/// Generalizes the named linalg ops of `region` (nested checkpoints too);
/// returns the generics that came from contractions, to specialize back.
static FailureOr<SmallVector<linalg::GenericOp>>
generalizeNamedOps(Region &region) {
  SmallVector<linalg::LinalgOp> named;
  region.walk([&](linalg::LinalgOp op) {
    // Fills only initialize: they never lie on a differentiated path.
    if (!isa<linalg::GenericOp, linalg::FillOp>(op))
      named.push_back(op);
  });
  IRRewriter rewriter(region.getContext());
  SmallVector<linalg::GenericOp> contractions;
  for (linalg::LinalgOp op : named) {
    bool contraction = linalg::isaContractionOpInterface(op);
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generic =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(generic))
      return op->emitOpError()
             << "cannot be differentiated: it has no linalg.generic form";
    if (contraction)
      contractions.push_back(*generic);
  }
  return contractions;
}

/// If `generic` is a matrix product in any transposition (three loops, one
/// of them a reduction, body `out + a * b`), returns the equivalent
/// `linalg.matmul` with explicit indexing maps.
static FailureOr<linalg::MatmulOp> specializeMatmul(RewriterBase &rewriter,
                                                    linalg::GenericOp generic) {
  if (generic.getNumLoops() != 3 || generic.getNumReductionLoops() != 1 ||
      generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(generic))
    return failure();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (llvm::any_of(maps, [](AffineMap m) {
        return m.getNumResults() != 2 || !m.isProjectedPermutation();
      }))
    return failure();
  // Rename the loops to (m, n, k) with out[m, n].
  unsigned m = maps[2].getDimPosition(0), n = maps[2].getDimPosition(1);
  unsigned k = 3 - m - n;
  MLIRContext *ctx = generic.getContext();
  SmallVector<AffineExpr> rename(3);
  rename[m] = getAffineDimExpr(0, ctx);
  rename[n] = getAffineDimExpr(1, ctx);
  rename[k] = getAffineDimExpr(2, ctx);
  auto renamed = [&](AffineMap map) {
    return map.replaceDimsAndSymbols(rename, {}, 3, 0);
  };
  // The operand that holds m comes first.
  unsigned lhs = maps[0].isFunctionOfDim(m) ? 0 : 1;
  if (!maps[lhs].isFunctionOfDim(m) || !maps[1 - lhs].isFunctionOfDim(n))
    return failure();
  SmallVector<Attribute> mapAttrs{AffineMapAttr::get(renamed(maps[lhs])),
                                  AffineMapAttr::get(renamed(maps[1 - lhs])),
                                  AffineMapAttr::get(renamed(maps[2]))};
  rewriter.setInsertionPoint(generic);
  auto matmul = linalg::MatmulOp::create(
      rewriter, generic.getLoc(), generic.getResultTypes(),
      ValueRange{generic.getDpsInputs()[lhs], generic.getDpsInputs()[1 - lhs]},
      generic.getDpsInits(),
      {rewriter.getNamedAttr("indexing_maps",
                             rewriter.getArrayAttr(mapAttrs))});
  if (failed(mlir::verify(matmul))) {
    rewriter.eraseOp(matmul);
    return failure();
  }
  rewriter.replaceOp(generic, matmul->getResults());
  return matmul;
}

/// Turns contraction-shaped generics into named matmuls (with transposed
/// operands where needed) so that they can reach GEMM libraries; other
/// contractions stay generic.
static void specializeContractions(MLIRContext *ctx,
                                   ArrayRef<linalg::GenericOp> generics) {
  IRRewriter rewriter(ctx);
  for (linalg::GenericOp generic : generics)
    (void)specializeMatmul(rewriter, generic);
}

/// Checks what the sweep relies on: static shapes everywhere.
static LogicalResult checkStatic(Operation *op, TypeRange types) {
  for (auto [i, type] : llvm::enumerate(types))
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && !tensor.hasStaticShape())
      return op->emitOpError() << "cannot be differentiated: block argument #"
                               << i << " has a dynamic shape (" << type
                               << "); train-differentiate needs static shapes";
  return success();
}

/// Differentiates the loss yielded by `body` with respect to `params` (block
/// arguments of `body`); the backward code goes before the terminator.
/// `toSpecialize` gets the contraction-shaped generics, which the caller
/// specializes once the gradients are in place (specializing replaces ops).
///
/// With `newAccumulator` (a micro-batch body), the parameters' adjoints
/// start from accumulators instead (see Sweep::newAccumulator): the result
/// is then empty and `accumulated` gets each parameter's accumulations.
static FailureOr<SmallVector<Value>> differentiateBody(
    Operation *owner, Block &body, ValueRange params, Value loss,
    SmallVectorImpl<linalg::GenericOp> &toSpecialize,
    std::function<Value(Type)> newAccumulator = nullptr,
    SmallVectorImpl<SmallVector<Sweep::Accumulation>> *accumulated = nullptr) {
  if (failed(checkStatic(owner, body.getArgumentTypes())))
    return failure();
  FailureOr<SmallVector<linalg::GenericOp>> contractions =
      generalizeNamedOps(*body.getParent());
  if (failed(contractions))
    return failure();

  OpBuilder builder(body.getTerminator());
  Sweep sweep(builder);
  sweep.newAccumulator = std::move(newAccumulator);
  for (Value param : params) {
    sweep.markActive(param);
    sweep.separateContributions.insert(param);
  }
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  sweep.propagateActivity(ops);

  Location loc = owner->getLoc();
  if (sweep.isActive(loss)) {
    auto lossType = cast<RankedTensorType>(loss.getType());
    Value one = arith::ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(
            lossType, builder.getFloatAttr(lossType.getElementType(), 1.0)));
    sweep.setAdjoint(loss, one);
    if (failed(sweep.reverse(ops)))
      return failure();
  }

  SmallVector<Value> grads;
  for (Value param : params) {
    if (sweep.accumulating()) {
      accumulated->emplace_back(sweep.getAccumulations(param));
      continue;
    }
    Value grad = sweep.getAdjoint(param);
    grads.push_back(grad ? grad : ga::zerosLike(builder, loc, param.getType()));
  }
  toSpecialize.assign(contractions->begin(), contractions->end());
  llvm::append_range(toSpecialize, sweep.created);
  return grads;
}

LogicalResult ga::differentiateStep(StepOp step) {
  if (step.getMicrobatches() != 1 || step.getDataParallel() != 1)
    return step.emitOpError()
           << "has microbatches = " << step.getMicrobatches()
           << " and data_parallel = " << step.getDataParallel()
           << "; split the batch first (train-split-batch), then "
              "train-differentiate differentiates the train.accumulate body";
  Block &body = step.getBody().front();
  YieldOp yield = step.getYield();
  Value loss = yield.getValues().front();
  SmallVector<linalg::GenericOp> toSpecialize;
  FailureOr<SmallVector<Value>> grads =
      differentiateBody(step, body, step.getParamArgs(), loss, toSpecialize);
  if (failed(grads))
    return failure();

  // Inline the body in place of the step.
  SmallVector<Value> results{loss};
  llvm::append_range(results, *grads);
  llvm::append_range(results, yield.getValues().drop_front());
  SmallVector<Value> operands(step.getParams());
  llvm::append_range(operands, step.getBatch());
  for (Value &result : results)
    if (auto arg = dyn_cast<BlockArgument>(result);
        arg && arg.getOwner() == &body)
      result = operands[arg.getArgNumber()];
  IRRewriter rewriter(step.getContext());
  rewriter.inlineBlockBefore(&body, step, operands);
  rewriter.replaceOp(step, results);
  rewriter.eraseOp(yield);
  specializeContractions(rewriter.getContext(), toSpecialize);
  return success();
}

//===----------------------------------------------------------------------===//
// train.accumulate: explicit accumulators
//===----------------------------------------------------------------------===//

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
  Value leaf(unsigned i) const { return leaves[i]->get(); }
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
  // It is cloned into the finalize region: its body may read only its own
  // values.
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
    if (llvm::any_of(scaling.leaves,
                     [&](OpOperand *leaf) { return leaf->get() == v; }))
      return false;
    scaling.leaves.push_back(input);
  }
  // Linear in the terms computed by the body, by the analysis's own rule:
  // summed over the micro-batches, it gives its value on the summed terms.
  std::string why;
  if (terms.empty() ||
      ga::bodyLinearity(generic, terms, {}, why) != ga::Linearity::Proportional)
    return false;
  scaling.tree.push_back(generic);
  return true;
}

/// If `loss` is computed by 0-d generics that are linear in the values the
/// body computes that they read, with factors that are the same in every
/// micro-batch (a sum divided by a global count; two such quotients added,
/// one per mask), returns them: their inputs are accumulated over the
/// micro-batches and the generics run once, on the accumulated values, as
/// in the full-batch step.
static std::optional<LossScaling> peelableScale(Value loss, AccumulateOp acc) {
  linalg::GenericOp root = scalarGeneric(loss);
  LossScaling scaling;
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
  if (alone && v.getType() == acc.getType()) {
    if (auto ce = v.getDefiningOp<CrossEntropyOp>();
        ce && v == ce.getLoss() && ce.getReduction() == Reduction::Sum &&
        !ce.getInit()) {
      ce.getInitMutable().assign(acc);
      return v;
    }
    if (auto linalgOp = v.getDefiningOp<linalg::LinalgOp>()) {
      unsigned j = cast<OpResult>(v).getResultNumber();
      OpOperand &init = linalgOp.getDpsInitsMutable()[j];
      if (ga::isZeroTensor(init.get()) &&
          ga::isAdditiveReduction(linalgOp, j)) {
        init.set(acc);
        return v;
      }
    }
  }
  return addInto(b, loc, acc, v);
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
      Value scaled;
      for (linalg::GenericOp generic : peel->tree) {
        auto type = cast<RankedTensorType>(generic.getResult(0).getType());
        toFinal.map(generic.getDpsInits()[0],
                    tensor::EmptyOp::create(fb, loc, type.getShape(),
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
      for (const Sweep::Accumulation &a : accs)
        grad = grad ? addTensors(fb, loc, grad, toFinal.lookup(a.accumulator))
                    : toFinal.lookup(a.accumulator);
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

//===----------------------------------------------------------------------===//
// Adjoint needs
//===----------------------------------------------------------------------===//

ga::AdjointNeeds ga::getAdjointNeeds(Operation *op) {
  if (auto differentiable = dyn_cast<DifferentiableOpInterface>(op))
    return differentiable.getAdjointNeeds();
  AdjointNeeds needs;
  needs.operands.assign(op->getNumOperands(), false);
  needs.results.assign(op->getNumResults(), false);
  needs.differentiable = llvm::none_of(op->getOperandTypes(),
                                       [](Type t) { return isFloatTensor(t); });
  return needs;
}

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

namespace {
struct TrainDifferentiatePass
    : ga::impl::TrainDifferentiatePassBase<TrainDifferentiatePass> {
  using Base::Base;

  // The adjoints come from the interface's external models: registered here
  // too, so that the pass works in any context.
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    ga::registerDifferentiableOpInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    SmallVector<Operation *> targets;
    getOperation()->walk([&](Operation *op) {
      if (isa<StepOp, AccumulateOp>(op))
        targets.push_back(op);
    });
    for (Operation *op : targets) {
      LogicalResult result =
          isa<StepOp>(op) ? ga::differentiateStep(cast<StepOp>(op))
                          : ga::differentiateAccumulate(cast<AccumulateOp>(op));
      if (failed(result))
        return signalPassFailure();
    }
  }
};

struct TestTrainAdjointNeedsPass
    : ga::impl::TestTrainAdjointNeedsPassBase<TestTrainAdjointNeedsPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    ga::registerDifferentiableOpInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    auto list = [](ArrayRef<bool> flags) {
      std::string text = "[";
      bool first = true;
      for (auto [i, flag] : llvm::enumerate(flags))
        if (flag) {
          text += (first ? "" : ", ") + std::to_string(i);
          first = false;
        }
      return text + "]";
    };
    getOperation()->walk([&](StepOp step) {
      for (Operation &op : step.getBody().front().without_terminator()) {
        ga::AdjointNeeds needs = ga::getAdjointNeeds(&op);
        if (!needs.differentiable)
          op.emitRemark() << "no adjoint rule";
        else
          op.emitRemark() << "adjoint needs operands " << list(needs.operands)
                          << ", results " << list(needs.results);
      }
    });
  }
};
} // namespace
