//===- RematUnits.cpp - A step's forward pass as a chain of units ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "RematUnits.h"

#include "ga/Analysis/BufferMemory.h"
#include "ga/Analysis/Decomposability.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Utils/LinalgMatchers.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

using namespace mlir;
using ga::remat::Segment;
using ga::remat::SegmentPlan;

namespace ga::remat_units {

int64_t tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return ga::allocationBytes(
             MemRefType::get(tensor.getShape(), tensor.getElementType()), 0)
      .value_or(0);
}

/// The value whose buffer `value` views (slices and reshapes are views after
/// bufferization).
static Value rootOf(Value value) {
  while (Operation *definer = value.getDefiningOp()) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(definer))
      value = slice.getSource();
    else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(definer))
      value = expand.getSrc();
    else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(definer))
      value = collapse.getSrc();
    else if (auto cast = dyn_cast<tensor::CastOp>(definer))
      value = cast.getSource();
    else
      break;
  }
  return value;
}

/// The bytes of each unit's temporaries (see measureUnits), given the
/// values already `counted` as boundaries or saved.
static void measureTransients(ArrayRef<Operation *> ops,
                              MutableArrayRef<Unit> units,
                              const llvm::DenseSet<Value> &counted) {
  Block *body = ops.empty() ? nullptr : ops.front()->getBlock();
  // The unit's temporaries: each buffer an operation of the unit makes
  // (empty tensors and fills excepted: the operation that writes them owns
  // the buffer) is alive from that operation to its last reader in the
  // body, through the views of it; a saved value or one read after the unit
  // to the unit's end.
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [p, op] : llvm::enumerate(ops))
    position[op] = p;
  auto lastReader = [&](Value buffer) {
    unsigned last = 0;
    SmallVector<Value> worklist{buffer};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (OpOperand &use : value.getUses()) {
        Operation *user = use.getOwner();
        if (isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
                tensor::CollapseShapeOp, tensor::CastOp>(user))
          worklist.push_back(user->getResult(0));
        Operation *top = body->findAncestorOpInBlock(*user);
        auto it = top ? position.find(top) : position.end();
        last = it == position.end() ? ops.size() : std::max(last, it->second);
      }
    }
    return last;
  };
  for (Unit &unit : units) {
    SmallVector<int64_t> change(unit.last - unit.first + 2, 0);
    for (unsigned p = unit.first; p <= unit.last; ++p) {
      if (isa<tensor::EmptyOp, linalg::FillOp>(ops[p]) ||
          ops[p]->hasTrait<OpTrait::ConstantLike>())
        continue;
      for (Value result : ops[p]->getResults()) {
        int64_t bytes = tensorBytes(result.getType());
        if (!bytes || rootOf(result) != result)
          continue;
        unsigned end = std::max(p, lastReader(result));
        if (end > unit.last || counted.contains(result))
          end = unit.last;
        change[p - unit.first] += bytes;
        change[end - unit.first + 1] -= bytes;
      }
    }
    int64_t alive = 0;
    for (int64_t delta : change) {
      alive += delta;
      unit.transientBytes = std::max(unit.transientBytes, alive);
    }
  }
}

/// Fills in the bytes of each unit: its boundary, and the values defined in
/// it that an adjoint reads (from the ops' DifferentiableOpInterface needs),
/// each buffer once.
static void measureUnits(ArrayRef<Operation *> ops,
                         MutableArrayRef<Unit> units) {
  llvm::DenseMap<Operation *, unsigned> unitOf;
  for (auto [index, unit] : llvm::enumerate(units))
    for (unsigned p = unit.first; p <= unit.last; ++p)
      unitOf[ops[p]] = index;
  Block *body = ops.empty() ? nullptr : ops.front()->getBlock();
  llvm::DenseSet<Value> counted;
  for (Unit &unit : units) {
    unit.boundaryBytes = tensorBytes(unit.boundary.getType());
    counted.insert(rootOf(unit.boundary));
  }
  for (auto [index, unit] : llvm::enumerate(units))
    for (unsigned p = unit.first; p <= unit.last; ++p)
      for (Value result : ops[p]->getResults())
        if (rootOf(result) == result)
          unit.largestBytes =
              std::max(unit.largestBytes, tensorBytes(result.getType()));
  // A softmax written as five generics is differentiated as one function
  // that reads its probabilities alone (train-differentiate's softmax rule):
  // the needs of its four intermediate steps do not count.
  llvm::DenseSet<Operation *> softmaxSteps;
  llvm::DenseSet<Operation *> softmaxEnds;
  for (Operation *op : ops)
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      if (std::optional<ga::SoftmaxChain> chain = ga::matchSoftmax(generic)) {
        softmaxEnds.insert(op);
        for (linalg::GenericOp step :
             {chain->rowMax, chain->difference, chain->exp, chain->sum})
          softmaxSteps.insert(step);
      }
  for (Operation *op : ops) {
    if (softmaxSteps.contains(op))
      continue;
    SmallVector<Value> read;
    if (softmaxEnds.contains(op)) {
      read.push_back(op->getResult(0));
    } else {
      ga::AdjointNeeds needs = ga::getAdjointNeeds(op);
      for (auto [flag, operand] : llvm::zip(needs.operands, op->getOperands()))
        if (flag)
          read.push_back(operand);
      for (auto [flag, result] : llvm::zip(needs.results, op->getResults()))
        if (flag)
          read.push_back(result);
    }
    for (Value value : read) {
      Value root = rootOf(value);
      Operation *definer = root.getDefiningOp();
      if (!definer || !counted.insert(root).second)
        continue;
      Operation *top = body->findAncestorOpInBlock(*definer);
      auto it = top ? unitOf.find(top) : unitOf.end();
      if (it == unitOf.end())
        continue; // the loss: alive in every plan
      units[it->second].savedBytes += tensorBytes(root.getType());
      units[it->second].saved.push_back(root);
    }
  }
  measureTransients(ops, units, counted);
}

/// Cuts the forward part of `body` into units: a unit ends after an
/// operation after which exactly one activation (a value that depends on
/// the batch) is still read later. The operations after the last cut (the
/// loss) form no unit.
SmallVector<Unit> findUnits(ga::train::StepOp step) {
  Block &body = step.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(ops))
    position[op] = i;
  llvm::DenseSet<Value> activations;
  unsigned numParams = step.getParams().size();
  for (BlockArgument argument : body.getArguments().drop_front(numParams))
    activations.insert(argument);
  // The last position (in the body) that reads each activation.
  llvm::DenseMap<Value, unsigned> lastUse;
  for (auto [i, op] : llvm::enumerate(ops)) {
    bool active = false;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        active |= activations.contains(operand);
    });
    if (!active)
      continue;
    for (Value result : op->getResults())
      activations.insert(result);
  }
  for (Value value : activations) {
    unsigned last = 0;
    bool used = false;
    for (Operation *user : value.getUsers()) {
      Operation *ancestor = body.findAncestorOpInBlock(*user);
      auto it = position.find(ancestor);
      if (it == position.end()) {
        last = ops.size(); // the terminator
        used = true;
        continue;
      }
      last = std::max(last, it->second);
      used = true;
    }
    if (used)
      lastUse[value] = last;
  }
  SmallVector<Unit> units;
  llvm::DenseSet<Value> live;
  for (BlockArgument argument : body.getArguments().drop_front(numParams))
    if (lastUse.count(argument))
      live.insert(argument);
  unsigned start = 0;
  for (auto [i, op] : llvm::enumerate(ops)) {
    for (Value result : op->getResults())
      if (lastUse.count(result) && lastUse[result] > i)
        live.insert(result);
    SmallVector<Value> dead;
    for (Value value : live)
      if (lastUse[value] <= i)
        dead.push_back(value);
    for (Value value : dead)
      live.erase(value);
    // Batch arguments read again later (the labels, by the loss) are the
    // caller's memory: they do not count.
    unsigned alive = 0;
    Value boundary;
    for (Value value : live)
      if (!isa<BlockArgument>(value)) {
        ++alive;
        boundary = value;
      }
    if (alive != 1)
      continue;
    Unit unit;
    unit.first = start;
    unit.last = static_cast<unsigned>(i);
    unit.boundary = boundary;
    for (unsigned j = start; j <= i; ++j) {
      unit.cost += ga::linalgWork(ops[j]);
      ops[j]->walk([&](Operation *inner) {
        if (auto mark = inner->getAttrOfType<StringAttr>("train.remat")) {
          unit.mustSave |= mark.getValue() == "save";
          unit.mustRecompute |= mark.getValue() == "recompute";
        }
      });
    }
    start = i + 1;
    // A unit without work (a reshape between two cuts) joins the next.
    if (unit.cost == 0) {
      start = unit.first;
      continue;
    }
    units.push_back(unit);
  }
  measureUnits(ops, units);
  return units;
}

/// Whether `value` is made from nothing the region needs as an input: a
/// tensor.empty, a constant, or a linalg.fill of those. Such values are
/// rebuilt inside a checkpoint (so that train-split-batch re-types them as
/// it re-types the inits of the body).
static bool isRebuildable(Value value) {
  Operation *definer = value.getDefiningOp();
  if (!definer)
    return false;
  if (isa<tensor::EmptyOp>(definer) ||
      definer->hasTrait<OpTrait::ConstantLike>())
    return definer->getNumOperands() == 0;
  if (auto fill = dyn_cast<linalg::FillOp>(definer))
    return llvm::all_of(fill->getOperands(), isRebuildable);
  return false;
}

/// Wraps `unitOps` (consecutive ops of a step body) in a train.checkpoint
/// whose inputs are the values they read from outside and whose results are
/// the values read after them.
static void wrapInCheckpoint(ArrayRef<Operation *> unitOps) {
  // Empty tensors, constants and fills stay where they are (later units
  // may read them too) and are rebuilt inside.
  SmallVector<Operation *> ops;
  for (Operation *op : unitOps)
    if (op->getNumResults() == 0 ||
        !llvm::all_of(op->getResults(), isRebuildable))
      ops.push_back(op);
  if (ops.empty())
    return;
  llvm::SmallPtrSet<Operation *, 32> inside;
  for (Operation *op : ops)
    op->walk([&](Operation *inner) { inside.insert(inner); });
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> rebuilt;
  std::function<void(Value)> rebuild = [&](Value value) {
    if (!rebuilt.insert(value.getDefiningOp()))
      return;
    for (Value operand : value.getDefiningOp()->getOperands())
      rebuild(operand);
  };
  for (Operation *op : ops)
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        Operation *definer = operand.getDefiningOp();
        Operation *owner =
            definer ? definer
                    : cast<BlockArgument>(operand).getOwner()->getParentOp();
        if (inside.contains(owner))
          continue;
        if (isRebuildable(operand))
          rebuild(operand);
        else
          inputs.insert(operand);
      }
    });
  SmallVector<Value> outputs;
  for (Operation *op : ops)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !inside.contains(user); }))
        outputs.push_back(result);
  OpBuilder b(ops.front());
  SmallVector<Type> resultTypes;
  for (Value output : outputs)
    resultTypes.push_back(output.getType());
  auto checkpoint = ga::train::CheckpointOp::create(
      b, ops.front()->getLoc(), resultTypes, inputs.getArrayRef());
  Block *block = b.createBlock(&checkpoint.getBody());
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
  // The rebuilt values, in the order of the body (operands first).
  SmallVector<Operation *> definers(rebuilt.begin(), rebuilt.end());
  llvm::sort(definers, [](Operation *a, Operation *b) {
    return a->getBlock() == b->getBlock() ? a->isBeforeInBlock(b)
                                          : b->isProperAncestor(a);
  });
  IRMapping copies;
  b.setInsertionPointToStart(block);
  for (Operation *definer : definers)
    b.clone(*definer, copies);
  for (Operation *op : ops)
    op->moveBefore(block, block->end());
  for (auto [i, argument] : llvm::enumerate(block->getArguments()))
    Value(inputs[i]).replaceUsesWithIf(argument, [&](OpOperand &use) {
      return checkpoint->isProperAncestor(use.getOwner());
    });
  for (Operation *definer : definers)
    for (Value value : definer->getResults())
      value.replaceUsesWithIf(copies.lookup(value), [&](OpOperand &use) {
        return checkpoint->isProperAncestor(use.getOwner());
      });
  // Each rebuilt value just before its first reader (the last first, so
  // that an empty tensor follows its fill): a buffer is allocated where its
  // tensor is made, and the recomputation, which replays the region in the
  // backward pass, should not hold every buffer of the segment at once.
  for (Operation *definer : llvm::reverse(definers)) {
    Operation *copy = copies.lookup(definer->getResult(0)).getDefiningOp();
    Operation *firstReader = nullptr;
    for (Operation *user : copy->getUsers()) {
      Operation *reader = block->findAncestorOpInBlock(*user);
      if (reader && (!firstReader || reader->isBeforeInBlock(firstReader)))
        firstReader = reader;
    }
    if (firstReader)
      copy->moveBefore(firstReader);
  }
  b.setInsertionPointToEnd(block);
  ga::train::YieldOp::create(b, checkpoint.getLoc(), outputs);
  for (auto [output, result] : llvm::zip(outputs, checkpoint.getResults()))
    output.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !checkpoint->isProperAncestor(use.getOwner());
    });
}

/// Checkpoints the checkpointed `segments` of the `index`-th train.step of
/// `module`.
/// The operations of the `index`-th train.step's body in `module`, by
/// position (the terminator excluded).
static SmallVector<Operation *> bodyOperations(ModuleOp module,
                                               unsigned index) {
  SmallVector<ga::train::StepOp> steps;
  module.walk([&](ga::train::StepOp step) { steps.push_back(step); });
  SmallVector<Operation *> ops;
  for (Operation &op : steps[index].getBody().front().without_terminator())
    ops.push_back(&op);
  return ops;
}

void applyPlan(ModuleOp module, unsigned index, ArrayRef<Unit> units,
               const SegmentPlan &segments) {
  SmallVector<Operation *> ops = bodyOperations(module, index);
  for (const Segment &segment : segments) {
    if (!segment.checkpointed)
      continue;
    unsigned first = units[segment.first].first;
    unsigned last = units[segment.last].last;
    wrapInCheckpoint(ArrayRef<Operation *>(ops).slice(first, last - first + 1));
  }
}

static constexpr llvm::StringLiteral kUnitTag = "ga.remat.unit.";
static constexpr llvm::StringLiteral kLossTag = "ga.remat.loss";

void tagUnits(ModuleOp module, unsigned index, ArrayRef<Unit> units) {
  SmallVector<Operation *> ops = bodyOperations(module, index);
  if (ops.empty())
    return;
  Block &body = *ops.front()->getBlock();
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [p, op] : llvm::enumerate(ops))
    position[op] = p;
  MLIRContext *context = module.getContext();
  auto tag = [&](Operation *op, StringAttr name) {
    op->walk([&](Operation *inner) {
      inner->setLoc(NameLoc::get(name, inner->getLoc()));
    });
  };
  for (auto [i, unit] : llvm::enumerate(units)) {
    StringAttr name = StringAttr::get(context, kUnitTag + std::to_string(i));
    // The boundary in `module`'s copy of the body: the same result of the
    // operation at the same position (a unit's boundary is a result of an
    // operation of the body).
    Operation *definer = unit.boundary.getDefiningOp();
    Value boundary =
        ops[std::distance(definer->getBlock()->begin(), definer->getIterator())]
            ->getResult(cast<OpResult>(unit.boundary).getResultNumber());
    // A value besides the boundary that the units after this one read (a
    // fill every product starts from, a weight's transpose) does not depend
    // on the batch: it is held whatever the plan, not the unit's; so is the
    // buffer it is written into (an empty tensor a shared fill writes).
    // Backwards over the unit, so that a destination's reader is known.
    llvm::DenseSet<Operation *> shared;
    for (unsigned p = unit.last + 1; p-- > unit.first;) {
      bool isShared = llvm::any_of(ops[p]->getResults(), [&](Value result) {
        return result != boundary &&
               llvm::any_of(result.getUses(), [&](OpOperand &use) {
                 Operation *user = use.getOwner();
                 Operation *top = body.findAncestorOpInBlock(*user);
                 auto it = top ? position.find(top) : position.end();
                 if (it == position.end() || it->second > unit.last)
                   return true;
                 auto destination = dyn_cast<DestinationStyleOpInterface>(user);
                 return destination && shared.contains(user) &&
                        destination.isDpsInit(&use);
               });
      });
      if (isShared)
        shared.insert(ops[p]);
      else
        tag(ops[p], name);
    }
  }
  StringAttr loss = StringAttr::get(context, kLossTag);
  for (unsigned p = units.empty() ? 0 : units.back().last + 1; p < ops.size();
       ++p)
    tag(ops[p], loss);
}

UnitTrace::UnitTrace(unsigned numUnits)
    : numUnits(numUnits), held(numUnits + 1, 0), kept(numUnits, 0),
      forward(numUnits, -1), backward(numUnits, -1), reached(numUnits, 0),
      lowest(static_cast<int>(numUnits)) {}

int UnitTrace::tagOf(Operation *op) {
  Location loc = op->getLoc();
  auto it = tags.find(loc);
  if (it != tags.end())
    return it->second;
  int found = -1;
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner)) {
      StringRef text = name.getName().getValue();
      unsigned unit = 0;
      if (text == kLossTag)
        found = std::max(found, static_cast<int>(numUnits));
      else if (text.consume_front(kUnitTag) && !text.getAsInteger(10, unit) &&
               unit < numUnits)
        found = std::max(found, static_cast<int>(unit));
    }
    return WalkResult::advance();
  });
  tags[loc] = found;
  return found;
}

/// An operation that computes on buffers (not one that makes, frees or
/// views them).
static bool computes(Operation &op) {
  if (isa<linalg::LinalgOp>(op))
    return true;
  if (op.getNumRegions() != 0 ||
      isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
          memref::ExtractStridedMetadataOp, ViewLikeOpInterface>(op) ||
      op.getName().getDialectNamespace() == "bufferization")
    return false;
  return llvm::any_of(op.getOperandTypes(),
                      [](Type type) { return isa<BaseMemRefType>(type); });
}

void UnitTrace::beforeOperation(Operation &op, int64_t heldBytes,
                                function_ref<int64_t(Value)> bufferOf) {
  if (phase == Phase::Done || !computes(op))
    return;
  int tag = tagOf(&op);
  // A buffer allocated where no unit's operation is (an empty tensor that
  // the operations of several units write, made again by the micro-batch
  // split) belongs to the unit of the first operation that writes it
  // (none, if that one is no unit's: a fill that every unit reads). What
  // an operation writes: a copy's target, a structured operation's
  // outputs; an outlined kernel's operands, unknown, all count.
  SmallVector<Value> written;
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    written.push_back(copy.getTarget());
  else if (auto destination = dyn_cast<DestinationStyleOpInterface>(op))
    llvm::append_range(written, destination.getDpsInits());
  else
    llvm::append_range(written, op.getOperands());
  for (Value operand : written) {
    if (!isa<BaseMemRefType>(operand.getType()))
      continue;
    auto it = unclaimed.find(bufferOf(operand));
    if (it == unclaimed.end())
      continue;
    if (tag >= 0) {
      owners[*it].first = tag;
      held[tag] += owners[*it].second;
    }
    unclaimed.erase(it);
  }
  if (tag < 0)
    return;
  int loss = static_cast<int>(numUnits);
  if (phase == Phase::Forward) {
    // The loss's operations that read no activation (the labels') may run
    // first: the forward pass ends at the first one after the last unit.
    if (tag == loss && highest + 1 == loss) {
      base = heldBytes;
      for (unsigned i = 0; i < numUnits; ++i) {
        kept[i] = held[i];
        base -= held[i];
      }
      phase = Phase::Loss;
      this->loss = heldBytes;
    } else if (tag != loss) {
      forward[tag] = std::max(forward[tag], heldBytes);
      highest = std::max(highest, tag);
    }
    return;
  }
  if (tag == loss) {
    if (phase == Phase::Loss)
      this->loss = std::max(this->loss, heldBytes);
    return;
  }
  // The adjoints run the units in reverse: a later unit after unit 0 (or
  // two units up) is the next micro-batch's forward pass.
  if (tag > lowest && (lowest == 0 || tag > lowest + 1)) {
    phase = Phase::Done;
    return;
  }
  phase = Phase::Backward;
  lowest = std::min(lowest, tag);
  if (backward[tag] < 0) {
    // What the backward pass holds as it reaches the unit, besides the
    // buffers of the unit and those before it.
    int64_t others = heldBytes;
    for (int i = 0; i <= tag; ++i)
      others -= held[i];
    reached[tag] = others;
  }
  backward[tag] = std::max(backward[tag], heldBytes);
}

void UnitTrace::allocated(Operation *alloc, int64_t bytes, int64_t id) {
  int tag = tagOf(alloc);
  owners[id] = {tag, bytes};
  if (tag >= 0)
    held[tag] += bytes;
  else
    unclaimed.insert(id);
}

void UnitTrace::freed(int64_t id) {
  auto it = owners.find(id);
  if (it == owners.end())
    return;
  if (it->second.first >= 0)
    held[it->second.first] -= it->second.second;
  owners.erase(it);
  unclaimed.erase(id);
}

bool UnitTrace::calibrate(MutableArrayRef<Unit> units,
                          int64_t &tailBytes) const {
  if (phase == Phase::Forward || units.size() != numUnits)
    return false;
  int64_t before = 0;
  for (auto [i, unit] : llvm::enumerate(units)) {
    if (forward[i] >= 0)
      unit.transientBytes = std::max<int64_t>(0, forward[i] - before);
    unit.savedBytes = kept[i] - unit.boundaryBytes;
    if (backward[i] >= 0) {
      unit.adjointBytes = std::max<int64_t>(0, backward[i] - before - kept[i]);
      unit.liftBytes = std::max<int64_t>(0, reached[i] - base);
    }
    before += kept[i];
  }
  tailBytes = std::max<int64_t>(0, loss - before);
  return true;
}

/// The chain model of `units`, the loss's values `tailBytes`.
ga::remat::SegmentChain chainOf(ArrayRef<Unit> units, int64_t tailBytes) {
  std::vector<ga::remat::ChainUnit> chain(units.begin(), units.end());
  return ga::remat::SegmentChain(std::move(chain), tailBytes);
}

/// The segments of `length` units (fewer at the end of a run) over the runs
/// of units that may be checkpointed (a unit marked "save" ends a run), the
/// units between them saved.
SegmentPlan segmentsOf(ArrayRef<Unit> units, unsigned length) {
  SegmentPlan segments;
  unsigned i = 0;
  while (i < units.size()) {
    if (units[i].mustSave) {
      segments.push_back({i, i, false});
      ++i;
      continue;
    }
    unsigned first = i;
    while (i < units.size() && !units[i].mustSave && i - first < length)
      ++i;
    segments.push_back({first, i - 1, true});
  }
  return segments;
}

SmallVector<Type> argumentTypes(func::FuncOp compiled, func::FuncOp source) {
  if (auto recorded = compiled->getAttrOfType<TypeAttr>(
          ga::train::TrainDialect::SignatureAttrHelper::getNameStr()))
    if (auto type = dyn_cast<FunctionType>(recorded.getValue()))
      return llvm::to_vector(type.getInputs());
  return llvm::to_vector(source.getArgumentTypes());
}

int64_t argumentBytes(ArrayRef<Type> types) {
  int64_t bytes = 0;
  for (Type type : types)
    bytes += tensorBytes(type);
  return bytes;
}

/// The bytes of the values the ops after the last unit define (the loss).
int64_t tailBytesOf(ga::train::StepOp step, ArrayRef<Unit> units) {
  Block &body = step.getBody().front();
  unsigned start = units.empty() ? 0 : units.back().last + 1;
  int64_t bytes = 0;
  unsigned position = 0;
  for (Operation &op : body.without_terminator()) {
    if (position++ < start)
      continue;
    for (Value result : op.getResults())
      if (rootOf(result) == result)
        bytes += tensorBytes(result.getType());
  }
  return bytes;
}

/// The forward work of all `units`.
double totalCostOf(ArrayRef<Unit> units) {
  double cost = 0;
  for (const Unit &unit : units)
    cost += unit.cost;
  return cost;
}

/// The elements of a step's parameters.
int64_t parameterElements(ga::train::StepOp step) {
  int64_t elements = 0;
  for (Value param : step.getParams())
    if (auto tensor = dyn_cast<RankedTensorType>(param.getType());
        tensor && tensor.hasStaticShape())
      elements += tensor.getNumElements();
  return elements;
}

} // namespace ga::remat_units
