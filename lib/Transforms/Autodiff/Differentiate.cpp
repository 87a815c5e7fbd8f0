//===- Differentiate.cpp - The reverse sweep and train-differentiate ------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The driver of reverse-mode differentiation: activity analysis (which
// values depend on a parameter), the backward sweep over a block with one
// adjoint accumulator per value, checkpoint recomputation, and the rewrite
// of train.step (train.accumulate's: Accumulate.cpp).
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Transforms/Passes.h"
#include "ga/Utils/LinalgMatchers.h"
#include "ga/Utils/TensorBuilders.h"

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
    // No gradient flows through train.stop_gradient: its result is a
    // constant of the differentiation.
    if (isa<StopGradientOp>(op))
      continue;
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
    // Not a reduction this sweep could continue: an accumulator of its
    // own, in the layout of the reduction behind reshapes and permuting
    // copies when there is one, else added to.
    OpOperand *init = nullptr;
    SmallVector<Operation *> layouts;
    if (matchReductionThroughLayouts(contribution, init, layouts)) {
      Value acc = newAccumulator(init->get().getType());
      init->set(acc);
      Value reduced = cast<DestinationStyleOpInterface>(init->getOwner())
                          .getTiedOpResult(init);
      accumulations[v].push_back({acc, reduced, std::move(layouts)});
      return;
    }
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

/// The softmax written as five generics (ga::matchSoftmax) ending at
/// `probs`, differentiated as one function when the probabilities have an
/// adjoint dp: ds = p * (dp - sum_j dp_j p_j), added to the scores'
/// adjoint. The backward pass then reads the probabilities alone, as
/// softmax's own gradient does, where the rules of the five generics read
/// the scores (the maximum's gradient), the exponentials and their sum: two
/// more [.., T] tensors kept per softmax, and more work. The maximum's
/// contribution, zero in exact arithmetic, is not computed. The chain's
/// intermediates, read by nothing else, get no adjoint, so the sweep skips
/// their generics. Returns false (nothing built) where `op` is no such
/// softmax.
static bool adjointSoftmax(Operation *op, Sweep &sweep) {
  auto probs = dyn_cast<linalg::GenericOp>(op);
  std::optional<ga::SoftmaxChain> c =
      probs ? ga::matchSoftmax(probs) : std::nullopt;
  if (!c)
    return false;
  for (linalg::GenericOp g : {c->rowMax, c->difference, c->exp, c->sum})
    if (sweep.getAdjoint(g->getResult(0)))
      return false;
  Value p = probs->getResult(0);
  Value dp = sweep.getAdjoint(p);
  if (!dp || !sweep.isActive(c->scores))
    return true; // Nothing reaches the scores.
  OpBuilder &b = sweep.builder;
  Location loc = probs.getLoc();
  auto type = cast<RankedTensorType>(p.getType());
  Type element = type.getElementType();
  unsigned rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap row = AffineMap::get(rank, 0, all.getResults().drop_back(), ctx);
  SmallVector<utils::IteratorType> rowLoops(rank - 1,
                                            utils::IteratorType::parallel);
  rowLoops.push_back(utils::IteratorType::reduction);
  // r = sum_j dp_j p_j, from zero.
  Value zeros = ga::filledTensor(b, loc, type.getShape().drop_back(),
                                 b.getZeroAttr(element));
  Value r = linalg::GenericOp::create(
                b, loc, zeros.getType(), ValueRange{dp, p}, zeros,
                ArrayRef<AffineMap>{all, all, row}, rowLoops,
                [](OpBuilder &nb, Location l, ValueRange args) {
                  Value product =
                      arith::MulFOp::create(nb, l, args[0], args[1]);
                  Value sum = arith::AddFOp::create(nb, l, product, args[2]);
                  linalg::YieldOp::create(nb, l, sum);
                })
                ->getResult(0);
  // ds = p * (dp - r).
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), element);
  SmallVector<utils::IteratorType> loops(rank, utils::IteratorType::parallel);
  Value ds =
      linalg::GenericOp::create(
          b, loc, type, ValueRange{p, dp, r}, empty,
          ArrayRef<AffineMap>{all, all, row, all}, loops,
          [](OpBuilder &nb, Location l, ValueRange args) {
            Value centered = arith::SubFOp::create(nb, l, args[1], args[2]);
            Value product = arith::MulFOp::create(nb, l, args[0], centered);
            linalg::YieldOp::create(nb, l, product);
          })
          ->getResult(0);
  sweep.addAdjoint(loc, c->scores, ds);
  return true;
}

LogicalResult Sweep::reverse(ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return bool(getAdjoint(r)); }))
      continue;
    if (adjointSoftmax(op, *this))
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
  // A mark of the analysis (train.per_example) stays on the product.
  if (Attribute mark = generic->getAttr("train.per_example"))
    matmul->setAttr("train.per_example", mark);
  rewriter.replaceOp(generic, matmul->getResults());
  return matmul;
}

/// Turns contraction-shaped generics into named matmuls (with transposed
/// operands where needed) so that they can reach GEMM libraries; other
/// contractions stay generic.
void ga::ad::specializeContractions(MLIRContext *ctx,
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
FailureOr<SmallVector<Value>> ga::ad::differentiateBody(
    Operation *owner, Block &body, ValueRange params, Value loss,
    SmallVectorImpl<linalg::GenericOp> &toSpecialize,
    std::function<Value(Type)> newAccumulator,
    SmallVectorImpl<SmallVector<Sweep::Accumulation>> *accumulated) {
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

void ga::markPerExampleReductions(Operation *owner, Block &body,
                                  ArrayRef<BatchClass> arguments) {
  Decomposability classes(owner, body, arguments);
  auto mark = UnitAttr::get(owner->getContext());
  body.walk([&](linalg::LinalgOp op) {
    if (op.getNumReductionLoops() == 0 || op->getNumResults() == 0)
      return;
    if (llvm::all_of(op->getResults(), [&](Value r) {
          return classes.get(r).kind == BatchClass::PerExample;
        }))
      op->setAttr("train.per_example", mark);
  });
}

LogicalResult ga::differentiateStep(StepOp step, bool markPerExample) {
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
  if (markPerExample)
    markPerExampleReductions(
        step, body,
        Decomposability::argumentClasses(body, step.getParamArgs(),
                                         step.getBatchArgs()));

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
      if (auto step = dyn_cast<StepOp>(op)) {
        if (failed(ga::differentiateStep(step, markPerExample)))
          return signalPassFailure();
        continue;
      }
      auto accumulate = cast<AccumulateOp>(op);
      if (failed(ga::differentiateAccumulate(accumulate)))
        return signalPassFailure();
      if (markPerExample) {
        Block &body = accumulate.getBody().front();
        markPerExampleReductions(
            accumulate, body,
            ga::Decomposability::argumentClasses(
                body, accumulate.getParamArgs(), accumulate.getBatchArgs(),
                accumulate.getAccumulatorArgs(), accumulate.getGlobalArgs()));
      }
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
