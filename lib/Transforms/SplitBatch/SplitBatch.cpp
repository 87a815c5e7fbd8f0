//===- SplitBatch.cpp - Micro-batch loops and rank slices -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train.step {microbatches = k, data_parallel = r} becomes
//
//   globals   = the parameter-independent batch-sums the body reads, computed
//               from the rank's rows and summed across ranks;
//   loss, g.. = train.accumulate microbatches = k (body re-typed to B/(r*k)
//               rows, globals as operands);
//   loss, g.. = train.all_reduce sum (r > 1).
//
// With r > 1 every rank takes rows [rank * B/r, (rank + 1) * B/r) of each
// batch operand (train.rank); the hoisted computation of the globals runs on
// those rows, with a train.all_reduce sum after every operation that sums
// over the batch, so that what follows (max(count, 1), ...) sees the sum over
// the whole global batch. The function gets `train.data_parallel = r` (and
// `train.shard = s` for a step with `shard = s > 0`, for train-shard-state).
//
// The body is cloned into the accumulate and then re-typed in place, walking
// the original and the clone in lockstep: every per-example value (class from
// the decomposability analysis) gets its batch dimension divided by r*k, and
// the shape-carrying pieces (slice sizes, expand_shape output shapes, inits
// of destination-passing ops) follow. The hoisted operations are re-typed the
// same way, by r.
//
//===----------------------------------------------------------------------===//

#include "Retype.h"
#include "ga/Analysis/Decomposability.h"
#include "ga/Transforms/NormalizeLoss.h"
#include "ga/Transforms/Passes.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINSPLITBATCHPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga;
using namespace ga::train;
using namespace ga::split_batch;

namespace {
/// The split of one step, phase by phase (see the file comment).
class Splitter {
public:
  Splitter(StepOp step, bool naive, bool statisticsPrepass)
      : step(step), naive(naive), statisticsPrepass(statisticsPrepass),
        k(step.getMicrobatches()), r(step.getDataParallel()) {}
  LogicalResult run();

private:
  /// Normalizes the losses, checks with the analysis that the split is
  /// exact and records the rank count on the function.
  LogicalResult checkAndPrepare();
  /// Which values are globals, metrics and hoisted auxiliary outputs.
  void classifyOutputs();
  /// The rank's rows of every batch operand (all of them when r = 1).
  void sliceRankRows(OpBuilder &b);
  /// Computes the globals and hoisted outputs before the loop, on the rank's
  /// rows, their sums over the batch completed across the ranks.
  LogicalResult hoistGlobals(OpBuilder &b);
  /// hoistGlobals' clones of `slice` (the operations the hoisted values
  /// need) when they run the model on the rows (the statistics pre-pass):
  /// a loop over the k micro-batches that carries the sums over the batch,
  /// so that the pre-pass holds one micro-batch's activations, as the
  /// accumulation loop does. False, with nothing built, when the slice is
  /// not of that form (a sum read again on the rows, a sum that does not
  /// start from zeros): it then runs on the rank's rows at once.
  FailureOr<bool> hoistAsLoop(OpBuilder &b,
                              const llvm::SetVector<Operation *> &slice);
  /// The slice as hoistAsLoop builds it: its operations in the body's
  /// order, those on the rows, and the sums over the rows among them.
  struct PrepassSlice {
    SmallVector<Operation *> ordered;
    llvm::SetVector<Operation *> rows, sums;
  };
  /// Whether `slice` has the form of a pre-pass of the model (see
  /// hoistAsLoop), with its parts.
  bool classifyPrepass(const llvm::SetVector<Operation *> &slice,
                       PrepassSlice &parts);
  /// Whether `op` reads a sum over the batch.
  bool readsBatchSum(Operation *op) const {
    return llvm::any_of(readValues(op), [&](Value v) {
      return analysis->get(v).kind == BatchClass::BatchSum;
    });
  }
  /// The loop of hoistAsLoop over a slice that has that form.
  LogicalResult buildPrepassLoop(OpBuilder &b, const PrepassSlice &parts);
  /// The train.accumulate over micro-batch slices, its body re-typed.
  LogicalResult buildAccumulate(OpBuilder &b);
  /// The step's results from the accumulate's (scaled and averaged in
  /// naive mode, summed across the ranks otherwise); erases the step.
  void replaceResults(OpBuilder &b);

  LogicalResult reduceAcrossRanks(Operation *original, Operation *clone,
                                  const Decomposability &analysis,
                                  IRMapping &mapping, OpBuilder &b);

  StepOp step;
  bool naive;
  bool statisticsPrepass;
  int64_t k, r;
  std::optional<Decomposability> analysis;
  SetVector<Value> globals, metrics, hoisted;
  SmallVector<Value> batch;
  /// From the step's body to the values computed before the loop.
  IRMapping outside;
  AccumulateOp acc;
};
} // namespace

/// After `clone` (a hoisted copy of `original` that reads the rank's rows):
/// every batch-sum that it computes from per-example operands is summed
/// across the ranks, and `mapping` sends the original result to that sum.
LogicalResult Splitter::reduceAcrossRanks(Operation *original, Operation *clone,
                                          const Decomposability &analysis,
                                          IRMapping &mapping, OpBuilder &b) {
  bool readsExamples = llvm::any_of(original->getOperands(), [&](Value v) {
    return analysis.get(v).kind == BatchClass::PerExample;
  });
  if (!readsExamples)
    return success();
  for (auto [j, orig] : llvm::enumerate(original->getResults())) {
    if (analysis.get(orig).kind != BatchClass::BatchSum)
      continue;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(original)) {
      if (!isZeroTensor(linalgOp.getDpsInits()[j]))
        return original->emitError()
               << "cannot split over " << step.getDataParallel()
               << " ranks: this sum over the batch starts from an init that "
                  "is not zero, which every rank would add";
    } else if (original->getNumRegions() > 0) {
      return original->emitError()
             << "cannot split over " << step.getDataParallel()
             << " ranks: this operation sums over the batch inside its "
                "region, where the sum cannot be completed across ranks";
    }
    Value local = clone->getResult(j);
    mapping.map(orig, AllReduceOp::create(b, local.getLoc(), local.getType(),
                                          local, ReduceKind::Sum)
                          .getResult());
  }
  return success();
}

LogicalResult Splitter::checkAndPrepare() {
  // The exact split normalizes mean losses itself (sum / global count); the
  // naive one keeps them, to average the micro-batch means. Both count
  // valid labels from the labels alone.
  if (failed(normalizeLosses(step, /*means=*/!naive)))
    return failure();
  analysis.emplace(step, /*meansAreSums=*/naive, statisticsPrepass);
  if (failed(analysis->checkSplitIsExact()))
    return failure();
  // The function runs on r ranks.
  if (r > 1) {
    if (auto func = step->getParentOfType<FunctionOpInterface>()) {
      auto existing = func->getAttrOfType<IntegerAttr>(
          TrainDialect::DataParallelAttrHelper::getNameStr());
      if (existing && existing.getInt() != r)
        return step.emitError()
               << "data_parallel = " << r << " in a function that already "
               << "runs on " << existing.getInt()
               << " ranks (another train.step): every step of a function "
                  "must use the same number of ranks";
      func->setAttr(
          TrainDialect::DataParallelAttrHelper::getNameStr(),
          IntegerAttr::get(IntegerType::get(step.getContext(), 64), r));
      // The sharding stage, for train-shard-state.
      auto stage = func->getAttrOfType<IntegerAttr>(
          TrainDialect::ShardAttrHelper::getNameStr());
      if (stage && stage.getInt() != step.getShard())
        return step.emitError()
               << "shard = " << step.getShard() << " in a function whose "
               << "other train.step has shard = " << stage.getInt()
               << ": every step of a function must use the same stage";
      if (step.getShard() > 0)
        func->setAttr(TrainDialect::ShardAttrHelper::getNameStr(),
                      IntegerAttr::get(IntegerType::get(step.getContext(), 64),
                                       step.getShard()));
    }
  }

  return success();
}

void Splitter::classifyOutputs() {
  Block &body = step.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  // The globals: global batch-sums read by non-global operations (exact
  // mode) and the auxiliary outputs (both modes).
  auto readByNonGlobal = [&](Value v) {
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      return !isa<YieldOp>(user) &&
             llvm::any_of(user->getResults(), [&](Value r) {
               return !analysis->get(r).isGlobal();
             });
    });
  };
  if (!naive)
    for (Operation &op : body.without_terminator())
      for (Value result : op.getResults())
        if (analysis->get(result).isGlobal() && readByNonGlobal(result))
          globals.insert(result);
  // Auxiliary outputs that depend on the parameters (sums over the batch,
  // the analysis checked it) are the accumulate's metrics: summed over the
  // micro-batches and the ranks. The others are computed outside (in both
  // modes); only the globals are passed into the loop.
  for (Value aux : yield.getOperands().drop_front())
    if (analysis->get(aux).kind == BatchClass::BatchSum &&
        analysis->get(aux).paramDependent)
      metrics.insert(aux);
  hoisted = globals;
  for (Value aux : yield.getOperands().drop_front())
    if (aux.getParentBlock() == &body && !isa<BlockArgument>(aux) &&
        !metrics.contains(aux))
      hoisted.insert(aux);
}

bool Splitter::classifyPrepass(const llvm::SetVector<Operation *> &slice,
                               PrepassSlice &parts) {
  Block &body = step.getBody().front();
  auto cls = [&](Value v) { return analysis->get(v); };
  // The slice in the body's order.
  SmallVector<Operation *> &ordered = parts.ordered;
  for (Operation &op : body.without_terminator())
    if (slice.contains(&op))
      ordered.push_back(&op);
  // Row operations (per-example values, or per-example operands: the
  // forward on the rows and the sums over them), the sums among them, the
  // rest before (invariant) or after (on the sums) the loop.
  llvm::SetVector<Operation *> &rows = parts.rows, &sums = parts.sums;
  llvm::DenseSet<Value> summed;
  bool forward = false;
  auto perExample = [&](Value v) {
    return cls(v).kind == BatchClass::PerExample;
  };
  for (Operation *op : ordered) {
    if (llvm::none_of(readValues(op), perExample) &&
        llvm::none_of(op->getResults(), perExample))
      continue;
    // A row operation that reads a sum would need it before the loop ends.
    if (readsBatchSum(op))
      return false;
    rows.insert(op);
    for (Value result : op->getResults()) {
      BatchClass c = cls(result);
      forward |= c.kind == BatchClass::PerExample && c.paramDependent;
      if (c.kind != BatchClass::BatchSum)
        continue;
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      unsigned j = cast<OpResult>(result).getResultNumber();
      if (!linalgOp || !isZeroTensor(linalgOp.getDpsInits()[j]) ||
          !isAdditiveReduction(linalgOp, j))
        return false;
      sums.insert(op);
      summed.insert(result);
    }
  }
  // Only a pre-pass of the model is worth a loop (a count of the labels
  // is not), and every value the step reads from it must be a sum's.
  if (!forward)
    return false;
  for (Value h : hoisted)
    if (h.getDefiningOp() && rows.contains(h.getDefiningOp()) &&
        !summed.contains(h))
      return false;
  return true;
}

LogicalResult Splitter::buildPrepassLoop(OpBuilder &b,
                                         const PrepassSlice &parts) {
  Block &body = step.getBody().front();
  const SmallVector<Operation *> &ordered = parts.ordered;
  const llvm::SetVector<Operation *> &rows = parts.rows, &sums = parts.sums;
  Location loc = step.getLoc();
  // Before: what the rows read that does not depend on the batch.
  for (Operation *op : ordered)
    if (!rows.contains(op) && !readsBatchSum(op))
      b.clone(*op, outside);
  // The loop over the micro-batches, the sums its iteration arguments.
  SmallVector<Value> inits;
  for (Operation *op : sums)
    for (Value result : op->getResults())
      inits.push_back(outside.lookup(
          cast<linalg::LinalgOp>(op)
              .getDpsInits()[cast<OpResult>(result).getResultNumber()]));
  int64_t micro =
      cast<RankedTensorType>(batch.front().getType()).getDimSize(0) / k;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value count = arith::ConstantIndexOp::create(b, loc, k);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, zero, count, one, inits);
  OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
  IRMapping inLoop = outside;
  Value offset =
      arith::MulIOp::create(inner, loc, loop.getInductionVar(),
                            arith::ConstantIndexOp::create(inner, loc, micro));
  unsigned numParams = step.getParams().size();
  for (auto [i, operand] : llvm::enumerate(batch))
    inLoop.map(body.getArgument(numParams + i),
               takeRows(inner, loc, operand, offset, k));
  SmallVector<Value> next;
  unsigned carried = 0;
  for (Operation *op : rows) {
    Operation *clone = inner.clone(*op, inLoop);
    SmallVector<Operation *> originals = preorder(op);
    SmallVector<Operation *> copies = preorder(clone);
    for (auto [original, copy] : llvm::zip(originals, copies))
      if (failed(retype(original, copy, *analysis, k * r)))
        return failure();
    if (failed(verifyRetyped(originals, copies, k * r)))
      return failure();
    if (!sums.contains(op))
      continue;
    auto linalgOp = cast<linalg::LinalgOp>(clone);
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      init.set(loop.getRegionIterArgs()[carried++]);
      next.push_back(linalgOp.getTiedOpResult(&init));
    }
  }
  scf::YieldOp::create(inner, loc, next);
  // After: the sums, completed across the ranks, and what reads them.
  unsigned j = 0;
  for (Operation *op : sums)
    for (Value result : op->getResults()) {
      Value total = loop.getResult(j++);
      if (r > 1)
        total =
            AllReduceOp::create(b, loc, total.getType(), total, ReduceKind::Sum)
                .getResult();
      outside.map(result, total);
    }
  for (Operation *op : ordered)
    if (!rows.contains(op) && readsBatchSum(op))
      b.clone(*op, outside);
  return success();
}

FailureOr<bool>
Splitter::hoistAsLoop(OpBuilder &b, const llvm::SetVector<Operation *> &slice) {
  if (!statisticsPrepass || k == 1)
    return false;
  PrepassSlice parts;
  if (!classifyPrepass(slice, parts))
    return false;
  if (failed(buildPrepassLoop(b, parts)))
    return failure();
  return true;
}

void Splitter::sliceRankRows(OpBuilder &b) {
  Location loc = step.getLoc();
  // The rank's rows of every batch operand (all of them when r = 1).
  batch.assign(step.getBatch().begin(), step.getBatch().end());
  if (r > 1) {
    // Every batch operand has B rows (the step's verifier checks it).
    int64_t rows =
        cast<RankedTensorType>(batch.front().getType()).getDimSize(0) / r;
    Value rank = RankOp::create(b, loc, b.getIndexType());
    Value offset = arith::MulIOp::create(
        b, loc, rank, arith::ConstantIndexOp::create(b, loc, rows));
    for (Value &operand : batch)
      operand = takeRows(b, loc, operand, offset, r);
  }
}

LogicalResult Splitter::hoistGlobals(OpBuilder &b) {
  Block &body = step.getBody().front();
  // Hoist what the globals need, on the rank's rows; sums over the batch
  // are completed across the ranks.
  unsigned numParams = step.getParams().size();
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    outside.map(arg,
                i < numParams ? step.getParams()[i] : batch[i - numParams]);
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work(hoisted.begin(), hoisted.end());
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !slice.insert(def))
      continue;
    llvm::append_range(work, readValues(def));
  }
  FailureOr<bool> looped = hoistAsLoop(b, slice);
  if (failed(looped))
    return failure();
  if (*looped)
    return success();
  for (Operation &op : body.without_terminator()) {
    if (!slice.contains(&op))
      continue;
    Operation *clone = b.clone(op, outside);
    if (r == 1)
      continue;
    SmallVector<Operation *> originals = preorder(&op);
    SmallVector<Operation *> copies = preorder(clone);
    for (auto [original, copy] : llvm::zip(originals, copies))
      if (failed(retype(original, copy, *analysis, r)))
        return failure();
    if (failed(verifyRetyped(originals, copies, r)))
      return failure();
    if (failed(reduceAcrossRanks(&op, clone, *analysis, outside, b)))
      return failure();
  }

  return success();
}

LogicalResult Splitter::buildAccumulate(OpBuilder &b) {
  Block &body = step.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  Location loc = step.getLoc();
  unsigned numParams = step.getParams().size();
  // The accumulate and its entry block.
  SmallVector<Value> globalValues;
  for (Value g : globals)
    globalValues.push_back(outside.lookup(g));
  SmallVector<Type> gradTypes(step.getParams().getTypes());
  SmallVector<Type> metricTypes;
  for (Value m : metrics)
    metricTypes.push_back(m.getType());
  acc = AccumulateOp::create(b, loc, step.getLoss().getType(), gradTypes,
                             metricTypes, step.getParams(), batch, globalValues,
                             /*accumulators=*/ValueRange{},
                             b.getI64IntegerAttr(k));
  Block *accBody = new Block();
  acc.getBody().push_back(accBody);
  IRMapping inside;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    Type type = arg.getType();
    if (i >= numParams)
      type = divideDim(cast<RankedTensorType>(type), 0, k * r);
    inside.map(arg, accBody->addArgument(type, arg.getLoc()));
  }
  for (Value g : globals)
    accBody->addArgument(g.getType(), g.getLoc());

  OpBuilder inner = OpBuilder::atBlockEnd(accBody);
  for (Operation &op : body.without_terminator())
    inner.clone(op, inside);
  SmallVector<Value> yielded = {inside.lookupOrDefault(yield.getOperand(0))};
  for (Value m : metrics)
    yielded.push_back(inside.lookupOrDefault(m));
  YieldOp::create(inner, yield.getLoc(), yielded);

  // Re-type the clone, walking it in lockstep with the original.
  SmallVector<Operation *> originals = preorder(body);
  SmallVector<Operation *> clones = preorder(*accBody);
  originals.pop_back(); // the yields differ
  clones.pop_back();
  for (auto [original, clone] : llvm::zip(originals, clones))
    if (failed(retype(original, clone, *analysis, k * r)))
      return failure();
  if (failed(verifyRetyped(originals, clones, k * r)))
    return failure();
  // Inside, the globals are the accumulate's arguments.
  for (auto [i, g] : llvm::enumerate(globals))
    inside.lookup(g).replaceAllUsesWith(acc.getGlobalArgs()[i]);
  // Drop the clones that only computed globals.
  for (Operation *op : llvm::reverse(clones))
    if (op->getBlock() == accBody && op->use_empty() && isPure(op))
      op->erase();
  if (failed(verify(acc))) {
    return step.emitError() << "train-split-batch produced an invalid "
                               "train.accumulate (see the errors above)";
  }

  return success();
}

void Splitter::replaceResults(OpBuilder &b) {
  auto yield = cast<YieldOp>(step.getBody().front().getTerminator());
  Location loc = step.getLoc();
  // Results.
  Value loss = acc.getLoss();
  SmallVector<Value> grads(acc.getGrads());
  if (naive && k > 1) {
    auto scale = [&](Value v) -> Value {
      auto type = cast<RankedTensorType>(v.getType());
      Type element = type.getElementType();
      return elementwise(b, loc, type.getShape(), v, {}, element,
                         [&](OpBuilder &nb, Location nloc, ValueRange args) {
                           Value factor = arith::ConstantOp::create(
                               nb, nloc, nb.getFloatAttr(element, 1.0 / k));
                           return SmallVector<Value>{arith::MulFOp::create(
                               nb, nloc, args[0], factor)};
                         })[0];
    };
    loss = scale(loss);
    for (Value &g : grads)
      g = scale(g);
  }
  // Ranks sum their loss and gradients (naive: average them).
  if (r > 1) {
    ReduceKind kind = naive ? ReduceKind::Avg : ReduceKind::Sum;
    auto reduce = [&](Value v) -> Value {
      return AllReduceOp::create(b, loc, v.getType(), v, kind).getResult();
    };
    loss = reduce(loss);
    for (Value &g : grads)
      g = reduce(g);
  }
  // Metrics are sums in both modes: summed across the ranks.
  SmallVector<Value> metricValues(acc.getMetrics());
  if (r > 1)
    for (Value &m : metricValues)
      m = AllReduceOp::create(b, loc, m.getType(), m, ReduceKind::Sum)
              .getResult();
  step.getLoss().replaceAllUsesWith(loss);
  for (auto [old, g] : llvm::zip(step.getGrads(), grads))
    old.replaceAllUsesWith(g);
  for (auto [old, aux] :
       llvm::zip(step.getAux(), yield.getOperands().drop_front())) {
    if (metrics.contains(aux))
      old.replaceAllUsesWith(
          metricValues[llvm::find(metrics, aux) - metrics.begin()]);
    else
      old.replaceAllUsesWith(outside.lookupOrDefault(aux));
  }
  step.erase();
}

LogicalResult Splitter::run() {
  if (failed(checkAndPrepare()))
    return failure();
  classifyOutputs();
  OpBuilder b(step);
  sliceRankRows(b);
  if (failed(hoistGlobals(b)) || failed(buildAccumulate(b)))
    return failure();
  replaceResults(b);
  return success();
}

namespace {
struct TrainSplitBatchPass
    : ga::impl::TrainSplitBatchPassBase<TrainSplitBatchPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<StepOp> steps;
    getOperation()->walk([&](StepOp step) {
      if (step.getMicrobatches() * step.getDataParallel() > 1)
        steps.push_back(step);
    });
    for (StepOp step : steps)
      if (failed(Splitter(step, naive, statisticsPrepass).run()))
        return signalPassFailure();
  }
};
} // namespace
