//===- Decomposability.cpp - Batch decomposability of a step --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The classification rules, operation by operation (see Decomposability.h
// for the classes). A linalg operation maps the batch dimension of each
// per-example operand to a loop through its indexing map; all of them must
// meet the same loop. A parallel batch loop keeps the result per-example, a
// reduction over it with an addition makes a batch-sum. Operations on
// batch-sums only are checked for linearity in the batch-sums that depend
// on the parameters, from their scalar body.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/Decomposability.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"
#include "train/TrainOps.h"

#include <cmath>

using namespace mlir;
using namespace ga;
using namespace ga::train;

std::string BatchClass::str() const {
  std::string dep = paramDependent ? ", parameter-dependent" : "";
  switch (kind) {
  case Invariant:
    return "invariant" + dep;
  case PerExample:
    return "per-example (batch dimension " + std::to_string(batchDim) + ")" +
           dep;
  case BatchSum:
    return paramDependent ? "batch-sum" + dep : "batch-sum, global";
  case Mixed:
    return "mixed" + dep;
  }
  return "";
}

static bool isFloatTensor(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return isa<FloatType>(shaped ? shaped.getElementType() : type);
}

static BatchClass perExample(int64_t dim, bool paramDependent = false) {
  BatchClass c;
  c.kind = BatchClass::PerExample;
  c.batchDim = dim;
  c.paramDependent = paramDependent;
  return c;
}

static BatchClass batchSum(bool paramDependent = false) {
  BatchClass c;
  c.kind = BatchClass::BatchSum;
  c.paramDependent = paramDependent;
  return c;
}

Decomposability::Decomposability(StepOp step, bool meansAreSums,
                                 bool statisticsPrepass)
    : step(step), meansAreSums(meansAreSums),
      statisticsPrepass(statisticsPrepass) {
  Block &body = step.getBody().front();
  visitBody(body,
            argumentClasses(body, step.getParamArgs(), step.getBatchArgs()));
}

Decomposability::Decomposability(Operation *owner, Block &body,
                                 ArrayRef<BatchClass> arguments)
    : step(owner), meansAreSums(false), statisticsPrepass(false),
      differentiated(true) {
  visitBody(body, arguments);
}

SmallVector<BatchClass> Decomposability::argumentClasses(Block &body,
                                                         ValueRange params,
                                                         ValueRange batch,
                                                         ValueRange sums,
                                                         ValueRange globals) {
  SmallVector<BatchClass> classes;
  for (BlockArgument arg : body.getArguments()) {
    BatchClass c;
    if (llvm::is_contained(params, arg)) {
      c.paramDependent = true;
      c.differentiable = isFloatTensor(arg.getType());
    } else if (llvm::is_contained(batch, arg)) {
      c = perExample(0);
    } else if (llvm::is_contained(sums, arg)) {
      c = batchSum(/*paramDependent=*/true);
    } else if (llvm::is_contained(globals, arg)) {
      c = batchSum();
    }
    classes.push_back(c);
  }
  return classes;
}

void Decomposability::visitBody(Block &body, ArrayRef<BatchClass> arguments) {
  assert(arguments.size() == body.getNumArguments() &&
         "one class per argument");
  for (auto [arg, c] : llvm::zip(body.getArguments(), arguments)) {
    classes[arg] = c;
    if (c.kind == BatchClass::PerExample && !batchSize)
      batchSize = cast<ShapedType>(arg.getType()).getDimSize(c.batchDim);
  }
  visitBlock(body);
}

BatchClass Decomposability::get(Value value) const {
  auto it = classes.find(value);
  return it == classes.end() ? BatchClass() : it->second;
}

void Decomposability::setMixed(Operation *op, const std::string &why) {
  SmallVector<Value> read = readValues(op);
  bool dep = llvm::any_of(read, [&](Value v) { return get(v).paramDependent; });
  for (Value r : op->getResults()) {
    BatchClass c;
    c.kind = BatchClass::Mixed;
    c.paramDependent = dep;
    classes[r] = c;
  }
  // Only the first operation on a path is the cause; later ones inherit.
  if (llvm::none_of(read,
                    [&](Value v) { return get(v).kind == BatchClass::Mixed; }))
    reasons.push_back({op, why});
}

void Decomposability::visitBlock(Block &block) {
  for (Operation &op : block.without_terminator())
    visit(&op);
}

/// Values captured by the regions of `op` (defined outside `op`).
/// The loop whose linalg.index every use of `value` in `op`'s body reads it
/// at in dimension `dim`, each use a tensor.extract; none otherwise.
static std::optional<unsigned> rowGatherLoop(Operation *op, Value value,
                                             int64_t dim) {
  std::optional<unsigned> loop;
  for (Operation *user : value.getUsers()) {
    if (!op->isProperAncestor(user))
      continue;
    auto extract = dyn_cast<tensor::ExtractOp>(user);
    if (!extract || extract.getTensor() != value)
      return std::nullopt;
    auto index = extract.getIndices()[dim].getDefiningOp<linalg::IndexOp>();
    if (!index || (loop && *loop != index.getDim()))
      return std::nullopt;
    loop = index.getDim();
  }
  return loop;
}

void Decomposability::setAll(Operation *op, BatchClass c, bool dep) {
  c.paramDependent = c.paramDependent || dep;
  for (Value r : op->getResults())
    classes[r] = c;
}

void Decomposability::visit(Operation *op) {
  classify(op);
  // A floating-point result has a gradient when a value it reads has one,
  // except through train.stop_gradient.
  bool differentiable =
      !isa<StopGradientOp>(op) && llvm::any_of(readValues(op), [&](Value v) {
        return get(v).differentiable;
      });
  for (Value r : op->getResults()) {
    BatchClass &c = classes[r];
    c.differentiable = differentiable && isFloatTensor(r.getType());
    // A batch statistic without a gradient, computed by the pre-pass.
    if (statisticsPrepass && c.kind == BatchClass::BatchSum &&
        c.paramDependent && !c.differentiable)
      c.paramDependent = false;
  }
}

void Decomposability::classify(Operation *op) {
  if (auto checkpoint = dyn_cast<CheckpointOp>(op))
    return visitCheckpoint(checkpoint);
  bool dep = false, anyPerExample = false, anySum = false;
  // A value read inside a body (a parameter's table in an embedding
  // lookup) makes the results depend on what it depends on.
  SmallVector<Value> captured;
  if (op->getNumRegions())
    captured = capturedValues(op);
  for (Value v : llvm::concat<Value>(op->getOperands(), captured)) {
    BatchClass c = get(v);
    if (c.kind == BatchClass::Mixed)
      return setMixed(op, "");
    dep |= c.paramDependent;
  }
  for (Value v : op->getOperands()) {
    BatchClass c = get(v);
    anyPerExample |= c.kind == BatchClass::PerExample;
    anySum |= c.kind == BatchClass::BatchSum;
  }
  // A detached value is its operand's, in value and in what it depends on.
  if (auto detached = dyn_cast<StopGradientOp>(op))
    return setAll(op, get(detached.getInput()), dep);
  if (auto ce = dyn_cast<CrossEntropyOp>(op))
    return visitCrossEntropy(ce, dep);
  if (auto attention = dyn_cast<AttentionOp>(op))
    return visitAttention(attention, dep);
  // A gradient of per-example rows is per-example with them.
  constexpr StringLiteral notExamples =
      "its rows are not the examples of the batch";
  constexpr StringLiteral partly =
      "pairs the batch's rows with rows that do not come from the batch";
  if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
    return visitRows(op, {grad.getLogits(), grad.getLabels()}, dep, notExamples,
                     partly);
  if (auto grad = dyn_cast<AttentionGradOp>(op)) {
    SmallVector<Value> rows;
    for (Value v : grad->getOperands())
      if (cast<ShapedType>(v.getType()).getRank() > 0)
        rows.push_back(v);
    return visitRows(op, rows, dep, notExamples, partly);
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return visitLinalg(linalgOp, dep, anySum, captured);
  if (visitShapeOp(op, dep, anyPerExample))
    return;
  if (op->getNumOperands() == 0 || (!anyPerExample && !anySum))
    return setAll(op, BatchClass(), dep);
  setMixed(op, "'" + op->getName().getStringRef().str() +
                   "' on batch values is not understood by the "
                   "decomposability analysis");
}

/// A checkpoint's body is classified in place: its arguments are its
/// inputs and its results what its body yields.
void Decomposability::visitCheckpoint(CheckpointOp checkpoint) {
  Block &body = checkpoint.getBody().front();
  for (auto [arg, operand] :
       llvm::zip(body.getArguments(), checkpoint.getInputs()))
    classes[arg] = get(operand);
  visitBlock(body);
  for (auto [result, yielded] :
       llvm::zip(checkpoint->getResults(), body.getTerminator()->getOperands()))
    classes[result] = get(yielded);
}

/// A loss over the batch's rows is a batch-sum, unless it mixes the batch
/// with rows from elsewhere or is a mean.
void Decomposability::visitCrossEntropy(CrossEntropyOp ce, bool dep) {
  BatchClass logits = get(ce.getLogits()), labels = get(ce.getLabels());
  for (const BatchClass &c : {logits, labels})
    if (c.kind == BatchClass::BatchSum ||
        (c.kind == BatchClass::PerExample && c.batchDim != 0))
      return setMixed(ce, "its rows are not the examples of the batch");
  // Row i of the logits goes with label i: either both carry the batch or
  // neither does.
  if ((logits.kind == BatchClass::PerExample) !=
      (labels.kind == BatchClass::PerExample))
    return setMixed(
        ce, std::string("pairs ") +
                (labels.kind == BatchClass::PerExample
                     ? "the batch's labels with logits that do not come "
                       "from the batch"
                     : "the batch's logits with labels that do not come "
                       "from the batch") +
                ": a micro-batch would take only some of the labels' rows "
                "but all of the logits' rows (or the reverse)");
  bool overBatch = logits.kind == BatchClass::PerExample;
  if (ce.getInit() && overBatch)
    return setMixed(ce, "sums the batch's tokens into an init: micro-batches "
                        "would each add it");
  if (ce.getReduction() == Reduction::Mean && !meansAreSums && overBatch)
    return setMixed(
        ce, "is a mean over the batch's tokens (reduction = mean): the "
            "micro-batch means do not add up to it; train-normalize-loss "
            "rewrites it into a sum divided by the global count of valid "
            "labels (train-split-batch does so itself)");
  if (ce.getReduction() == Reduction::None)
    setAll(ce, overBatch ? perExample(0) : BatchClass(), dep);
  else
    setAll(ce, overBatch ? batchSum() : BatchClass(), dep);
  // The count depends on the labels alone.
  if (ce.getCount() && overBatch)
    classes[ce.getCount()] = batchSum();
}

/// Attention mixes positions within an example, never examples: per-example
/// (along dimension 0) when its query, keys and values all are, invariant
/// when none is.
void Decomposability::visitAttention(AttentionOp attention, bool dep) {
  visitRows(attention, attention->getOperands(), dep,
            "its batch dimension is not the examples of the batch",
            "attends from the batch's examples to keys or values that do not "
            "come from the batch: a micro-batch would take only some of "
            "their rows");
}

/// A structured op: per-example along the loop that meets the batch
/// dimensions of its operands, a batch-sum where it sums over that loop or
/// is linear in the batch-sums it reads, batch-invariant otherwise.
void Decomposability::visitRows(Operation *op, ValueRange rows, bool dep,
                                StringRef notExamples, StringRef partly) {
  bool overBatch = false, notOverBatch = false;
  for (Value v : rows) {
    BatchClass c = get(v);
    if (c.kind == BatchClass::BatchSum ||
        (c.kind == BatchClass::PerExample && c.batchDim != 0))
      return setMixed(op, notExamples.str());
    (c.kind == BatchClass::PerExample ? overBatch : notOverBatch) = true;
  }
  if (overBatch && notOverBatch)
    return setMixed(op, partly.str());
  setAll(op, overBatch ? perExample(0) : BatchClass(), dep);
}

void Decomposability::visitLinalg(linalg::LinalgOp linalgOp, bool dep,
                                  bool anySum, ArrayRef<Value> captured) {
  Operation *op = linalgOp;
  // A per-example tensor read in the body only by tensor.extract at a loop
  // index in its batch dimension (a gather of each example's own row, as
  // torch-mlir's NLL loss reads the log-probabilities at the labels) meets
  // that loop like an operand does.
  std::optional<unsigned> batchLoop;
  for (Value v : captured) {
    BatchClass c = get(v);
    // A global (computed for the whole batch before the micro-batches, such
    // as a prompt group's mean reward gathered by each completion's group
    // id) is the same in every micro-batch: a table like a parameter.
    if (c.isGlobal())
      continue;
    if (c.kind == BatchClass::BatchSum)
      return setMixed(op, "reads a batch-sum through its body (for example "
                          "tensor.extract): the analysis cannot tell how it "
                          "is combined");
    if (c.kind != BatchClass::PerExample)
      continue;
    std::optional<unsigned> loop = rowGatherLoop(op, v, c.batchDim);
    if (!loop)
      return setMixed(op, "reads a batch value through its body other than "
                          "by tensor.extract of each example's own row (the "
                          "batch index a linalg.index): the analysis cannot "
                          "tell which examples it combines");
    if (batchLoop && *batchLoop != *loop)
      return setMixed(op, "combines different examples: the rows it "
                          "gathers and its operands meet different loops");
    batchLoop = loop;
  }
  for (OpOperand &operand : op->getOpOperands()) {
    BatchClass c = get(operand.get());
    if (c.kind != BatchClass::PerExample)
      continue;
    AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(c.batchDim));
    if (!dim)
      return setMixed(op, "reads the batch dimension through a "
                          "non-trivial index expression");
    if (batchLoop && *batchLoop != dim.getPosition())
      return setMixed(op, "combines different examples: the batch "
                          "dimensions of its operands meet different loops");
    batchLoop = dim.getPosition();
  }
  if (batchLoop)
    return visitBatchLoop(linalgOp, *batchLoop, dep);
  if (anySum)
    return visitBatchSumInputs(linalgOp, dep);
  setAll(op, BatchClass(), dep);
}

/// A structured op whose loop `batchLoop` runs over the batch's examples.
void Decomposability::visitBatchLoop(linalg::LinalgOp linalgOp,
                                     unsigned batchLoop, bool dep) {
  Operation *op = linalgOp;
  // The batch loop's index may only pick each example's own row.
  bool readsIndex = false;
  op->walk([&](linalg::IndexOp index) {
    if (index.getDim() != batchLoop)
      return;
    for (OpOperand &use : index->getUses()) {
      auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
      BatchClass c = extract ? get(extract.getTensor()) : BatchClass();
      readsIndex |=
          !extract || c.kind != BatchClass::PerExample ||
          use.getOperandNumber() != 1 + static_cast<unsigned>(c.batchDim);
    }
  });
  if (readsIndex)
    return setMixed(op, "reads the position within the batch "
                        "(linalg.index of the batch loop): a "
                        "micro-batch sees other positions");
  for (OpOperand &operand : op->getOpOperands()) {
    BatchClass c = get(operand.get());
    if (c.kind != BatchClass::BatchSum || !c.paramDependent)
      continue;
    std::string why = "feeds a batch statistic that depends on the "
                      "parameters into per-example values (like batch "
                      "normalization): a split would compute the statistic "
                      "per micro-batch";
    // Detached (PPO's advantage normalization, a no-grad threshold): the
    // statistics pre-pass makes it a global of the whole batch.
    if (!c.differentiable)
      why += "; it carries no gradient: batch-statistics=prepass computes "
             "it over the whole batch before the micro-batches, at the cost "
             "of one more forward pass of what it needs (" +
             std::to_string(static_cast<int>(
                 std::lround(100 * prepassShare({operand.get()})))) +
             "% of the step's forward work)";
    return setMixed(op, why);
  }
  bool parallel = linalgOp.getIteratorTypesArray()[batchLoop] ==
                  utils::IteratorType::parallel;
  for (auto [j, result] : llvm::enumerate(op->getResults())) {
    if (!parallel) {
      if (!isAdditiveReduction(linalgOp, j))
        return setMixed(
            op, "reduces over the batch dimension with something other "
                "than a sum (a maximum, a softmax across the batch, ...): "
                "the micro-batch results do not add up to it");
      classes[result] = batchSum(dep);
      continue;
    }
    AffineMap map =
        linalgOp.getMatchingIndexingMap(linalgOp.getDpsInitOperand(j));
    std::optional<unsigned> pos =
        map.getResultPosition(getAffineDimExpr(batchLoop, op->getContext()));
    if (!pos)
      return setMixed(op, "drops the batch dimension without summing "
                          "over it");
    classes[result] = perExample(*pos, dep);
  }
}

double Decomposability::prepassShare(ArrayRef<Value> statistics) const {
  Block &body = cast<StepOp>(step).getBody().front();
  llvm::SmallPtrSet<Operation *, 32> slice;
  SmallVector<Value> work(statistics.begin(), statistics.end());
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def)
      continue;
    def = body.findAncestorOpInBlock(*def);
    if (!def || !slice.insert(def).second)
      continue;
    llvm::append_range(work, readValues(def));
  }
  double part = 0, whole = 0;
  for (Operation &op : body.without_terminator()) {
    double w = linalgWork(&op);
    whole += w;
    if (slice.contains(&op))
      part += w;
  }
  return whole > 0 ? part / whole : 0;
}

/// A structured op without a batch loop that reads batch-sums: a batch-sum
/// when it is linear in the parameter-dependent ones (scaling a sum by a
/// global count, adding two sums).
void Decomposability::visitBatchSumInputs(linalg::LinalgOp linalgOp, bool dep) {
  llvm::SmallDenseSet<Value> sumArgs, accumulators;
  Block *body = linalgOp.getBlock();
  for (OpOperand *operand : linalgOp.getDpsInputOperands()) {
    BatchClass c = get(operand->get());
    if (c.kind == BatchClass::BatchSum && c.paramDependent)
      sumArgs.insert(body->getArgument(operand->getOperandNumber()));
  }
  for (unsigned j = 0; j < linalgOp.getNumDpsInits(); ++j) {
    BlockArgument out = body->getArgument(linalgOp.getNumDpsInputs() + j);
    BatchClass c = get(linalgOp.getDpsInits()[j]);
    if (c.kind == BatchClass::BatchSum && c.paramDependent)
      sumArgs.insert(out);
    else if (linalgOp.getNumReductionLoops() > 0 &&
             isAdditiveReduction(linalgOp, j))
      accumulators.insert(out);
  }
  std::string why;
  if (!sumArgs.empty() &&
      bodyLinearity(linalgOp, sumArgs, accumulators, why) == Linearity::Other) {
    // A batch statistic without a gradient among them: the pre-pass would
    // make it a global.
    SmallVector<Value> statistics;
    for (Value v : linalgOp.getDpsInputs()) {
      BatchClass c = get(v);
      if (c.kind == BatchClass::BatchSum && c.paramDependent &&
          !c.differentiable)
        statistics.push_back(v);
    }
    if (!statistics.empty())
      why += "; one of them carries no gradient (a batch statistic, such as "
             "a mixture's routing fractions): batch-statistics=prepass "
             "computes it over the whole batch before the micro-batches, "
             "at the cost of one more forward pass of what it needs (" +
             std::to_string(static_cast<int>(
                 std::lround(100 * prepassShare(statistics)))) +
             "% of the step's forward work)";
    return setMixed(linalgOp, why);
  }
  setAll(linalgOp, batchSum(), dep);
}

/// Slices and reshapes move the batch dimension or keep it whole; false
/// when `op` is none of them.
bool Decomposability::visitShapeOp(Operation *op, bool dep,
                                   bool anyPerExample) {
  return visitSliceOp(op, dep, anyPerExample) ||
         visitJoinOp(op, dep, anyPerExample) || visitReshapeOp(op, dep);
}

bool Decomposability::visitSliceOp(Operation *op, bool dep,
                                   bool anyPerExample) {
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    BatchClass src = get(slice.getSource());
    if (src.kind != BatchClass::PerExample) {
      setAll(op, src, dep);
      return true;
    }
    auto srcType = slice.getSourceType();
    int64_t d = src.batchDim;
    if (slice.getStaticOffsets()[d] != 0 || slice.getStaticStrides()[d] != 1 ||
        slice.getStaticSizes()[d] != srcType.getDimSize(d)) {
      setMixed(op, "takes only part of the batch dimension: a "
                   "micro-batch would take a different part");
      return true;
    }
    // Rank reduction drops unit dimensions before the batch dimension.
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    int64_t newDim = d;
    for (int64_t i = 0; i < d; ++i)
      newDim -= dropped.test(i);
    setAll(op, perExample(newDim), dep);
    return true;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    BatchClass src = get(insert.getSource()), dest = get(insert.getDest());
    if (src.kind == BatchClass::BatchSum || dest.kind == BatchClass::BatchSum) {
      if (src.kind == BatchClass::PerExample ||
          dest.kind == BatchClass::PerExample)
        setMixed(op, "mixes a batch-sum with per-example values");
      else
        setAll(op, batchSum(), dep);
      return true;
    }
    if (!anyPerExample) {
      setAll(op, BatchClass(), dep);
      return true;
    }
    // Per-example rows written over the whole batch dimension of a tensor
    // that does not depend on the batch (the gradient of a slice, written
    // into zeros): row b is the tensor's row b with example b's values. A
    // classification only: a split would have to resize that tensor, which
    // train-split-batch does not, so only a body that is not split again
    // (a differentiated one) reads it so.
    if (differentiated && dest.kind == BatchClass::Invariant &&
        insert.getSourceType().getRank() == insert.getDestType().getRank()) {
      int64_t d = src.batchDim;
      if (insert.getStaticOffsets()[d] == 0 &&
          insert.getStaticStrides()[d] == 1 &&
          insert.getStaticSizes()[d] == insert.getDestType().getDimSize(d)) {
        setAll(op, perExample(d), dep);
        return true;
      }
    }
    if (dest.kind != BatchClass::PerExample) {
      setMixed(op, "writes per-example values into a tensor without "
                   "a batch dimension");
      return true;
    }
    int64_t d = dest.batchDim;
    if (insert.getStaticOffsets()[d] != 0 ||
        insert.getStaticSizes()[d] != insert.getDestType().getDimSize(d))
      setMixed(op, "writes only part of the batch dimension");
    else
      setAll(op, perExample(d), dep);
    return true;
  }
  return false;
}

bool Decomposability::visitJoinOp(Operation *op, bool dep, bool anyPerExample) {
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    // A padding of each example (a convolution's zeros around its
    // positions); the padding value must not vary with the batch.
    BatchClass src = get(pad.getSource());
    Value padding = pad.getConstantPaddingValue();
    if (!padding || get(padding).kind == BatchClass::PerExample ||
        get(padding).kind == BatchClass::BatchSum) {
      setMixed(op, "pads with a value that is not a constant");
      return true;
    }
    if (src.kind != BatchClass::PerExample) {
      setAll(op, src, dep);
      return true;
    }
    int64_t d = src.batchDim;
    if (pad.getStaticLow()[d] != 0 || pad.getStaticHigh()[d] != 0)
      setMixed(op, "pads the batch dimension: a micro-batch would hold "
                   "padding rows of its own");
    else
      setAll(op, perExample(d), dep);
    return true;
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    // Per-example inputs with one batch dimension, joined along another.
    std::optional<int64_t> d;
    for (Value input : concat.getInputs()) {
      BatchClass c = get(input);
      if (c.kind == BatchClass::PerExample && (!d || *d == c.batchDim)) {
        d = c.batchDim;
        continue;
      }
      if (c.kind == BatchClass::Invariant && !anyPerExample)
        continue;
      setMixed(op, c.kind == BatchClass::PerExample
                       ? "joins per-example values whose batch dimensions "
                         "differ"
                       : "joins per-example values with values that are "
                         "not per-example");
      return true;
    }
    if (!d)
      setAll(op, BatchClass(), dep);
    else if (*d == static_cast<int64_t>(concat.getDim()))
      setMixed(op, "joins values along the batch dimension: a micro-batch "
                   "would hold rows of several inputs");
    else
      setAll(op, perExample(*d), dep);
    return true;
  }
  return false;
}

bool Decomposability::visitReshapeOp(Operation *op, bool dep) {
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    BatchClass src = get(collapse.getSrc());
    if (src.kind != BatchClass::PerExample) {
      setAll(op, src, dep);
      return true;
    }
    for (auto [g, group] :
         llvm::enumerate(collapse.getReassociationIndices())) {
      if (!llvm::is_contained(group, src.batchDim))
        continue;
      // Unit dimensions before the batch's in the group do not interleave
      // examples ([1, B*S, D] into [B*S, D]).
      auto srcType = collapse.getSrcType();
      bool outerUnits = llvm::all_of(group, [&](int64_t d) {
        return d >= src.batchDim || srcType.getDimSize(d) == 1;
      });
      if (!outerUnits)
        setMixed(op, "merges the batch dimension into an outer "
                     "dimension: examples would interleave");
      else
        setAll(op, perExample(g), dep);
      return true;
    }
    return false;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    BatchClass src = get(expand.getSrc());
    if (src.kind != BatchClass::PerExample) {
      setAll(op, src, dep);
      return true;
    }
    // The batch goes to the group's first dimension that is not a unit
    // (torch-mlir's einsum expands [B*S, D] into [1, B*S, D]).
    auto group = expand.getReassociationIndices()[src.batchDim];
    int64_t first = group.front();
    for (int64_t d : group)
      if (first == d && d != group.back() &&
          expand.getResultType().getDimSize(d) == 1)
        first = d + 1;
    if (batchSize == 0 ||
        expand.getResultType().getDimSize(first) % batchSize != 0)
      setMixed(op, "splits the batch dimension so that its outer "
                   "part no longer holds whole examples");
    else
      setAll(op, perExample(first), dep);
    return true;
  }
  return false;
}

MixedReason Decomposability::findSplitProblem() const {
  auto yield =
      cast<YieldOp>(cast<StepOp>(step).getBody().front().getTerminator());
  // The mixed values the results depend on: report the first cause.
  llvm::SmallPtrSet<Operation *, 16> relevant;
  SmallVector<Value> work(yield.getOperands().begin(),
                          yield.getOperands().end());
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    relevant.insert(def);
    for (Value operand : def->getOperands())
      work.push_back(operand);
    for (Value captured : capturedValues(def))
      work.push_back(captured);
    if (auto checkpoint = dyn_cast<CheckpointOp>(def))
      for (Value y :
           checkpoint.getBody().front().getTerminator()->getOperands())
        work.push_back(y);
  }
  for (const MixedReason &reason : reasons)
    if (relevant.contains(reason.op) && !reason.why.empty())
      return reason;

  BatchClass loss = get(yield.getOperand(0));
  if (loss.kind != BatchClass::BatchSum)
    return {yield, "the loss is " + loss.str() +
                       ", not a sum over the batch: the micro-batch losses "
                       "would not add up to it"};
  for (auto [i, aux] : llvm::enumerate(yield.getOperands().drop_front())) {
    BatchClass c = get(aux);
    if (c.kind != BatchClass::BatchSum && c.kind != BatchClass::Invariant)
      return {yield,
              "auxiliary output #" + std::to_string(i) + " is " + c.str() +
                  ": a split step can return only values that do not depend "
                  "on the batch and sums over the batch (a count of valid "
                  "tokens, the summed loss, a count of correct predictions), "
                  "which it accumulates over the micro-batches and sums "
                  "across the ranks"};
  }
  return {};
}

LogicalResult Decomposability::checkSplitIsExact() const {
  MixedReason problem = findSplitProblem();
  if (!problem.op)
    return success();
  auto step = cast<StepOp>(this->step);
  // Reasons on the terminator are whole clauses; the others describe the
  // operation they are attached to.
  InFlightDiagnostic diag =
      problem.op->emitError()
      << "cannot split this step into " << step.getDataParallel()
      << " rank(s) x " << step.getMicrobatches() << " micro-batch(es) exactly: "
      << (isa<YieldOp>(problem.op) ? "" : "this operation ") << problem.why;
  diag.attachNote(step.getLoc()) << "the train.step being split";
  return failure();
}
