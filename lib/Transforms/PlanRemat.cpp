//===- PlanRemat.cpp - Checkpoints that fit a step into a memory budget ---===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Rematerialization under a budget in bytes. The forward part of a step body
// is cut into units where a single activation is alive (a transformer's
// residual stream between and inside blocks); the planner chooses which
// units become `train.checkpoint` regions. The search runs on a model of the
// chain of units (ChainModel below: a dynamic program, milliseconds); every
// plan it proposes is compiled on a copy by the CPU pipeline up to its
// buffers and measured by the memory model (ga/Analysis/BufferMemory.h),
// which predicts the runtime's count to the byte: a plan is used only if the
// measurement says it fits.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/BufferMemory.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Transforms/Passes.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <cmath>
#include <functional>

namespace ga {
#define GEN_PASS_DEF_TRAINPLANREMATPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// Ops [first, last] of a step body, by position.
struct Unit {
  unsigned first, last;
  double cost;
  bool mustSave = false;
  bool mustRecompute = false;
  /// The activation alive after the unit (its output), and its bytes.
  Value boundary;
  int64_t boundaryBytes = 0;
  /// The bytes of the values defined in the unit that its adjoints read
  /// (besides the boundary): what a saved unit keeps for the backward pass
  /// and a checkpointed one recomputes.
  int64_t savedBytes = 0;
  /// The bytes of the largest value the unit defines: its adjoint and the
  /// adjoint of an operand are alive at once in the unit's backward pass.
  int64_t largestBytes = 0;
};

} // namespace

/// The work of `op`'s linalg operations: the points of their iteration
/// spaces (twice for a contraction).
static double workOf(Operation *op) {
  double work = 0;
  op->walk([&](linalg::LinalgOp linalgOp) {
    double points = 1;
    for (int64_t range : linalgOp.getStaticLoopRanges())
      points *= ShapedType::isDynamic(range) ? 1 : range;
    work += linalgOp.getNumReductionLoops() ? 2 * points : points;
  });
  return work;
}

/// The bytes the runtime allocates for a tensor of `type` (0 if dynamic).
static int64_t tensorBytes(Type type) {
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
  for (Operation *op : ops) {
    ga::AdjointNeeds needs = ga::getAdjointNeeds(op);
    SmallVector<Value> read;
    for (auto [flag, operand] : llvm::zip(needs.operands, op->getOperands()))
      if (flag)
        read.push_back(operand);
    for (auto [flag, result] : llvm::zip(needs.results, op->getResults()))
      if (flag)
        read.push_back(result);
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
    }
  }
}

/// Cuts the forward part of `body` into units: a unit ends after an
/// operation after which exactly one activation (a value that depends on
/// the batch) is still read later. The operations after the last cut (the
/// loss) form no unit.
static SmallVector<Unit> findUnits(ga::train::StepOp step) {
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
    Unit unit{start, static_cast<unsigned>(i), 0};
    unit.boundary = boundary;
    for (unsigned j = start; j <= i; ++j) {
      unit.cost += workOf(ops[j]);
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
  b.setInsertionPointToEnd(block);
  ga::train::YieldOp::create(b, checkpoint.getLoc(), outputs);
  for (auto [output, result] : llvm::zip(outputs, checkpoint.getResults()))
    output.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !checkpoint->isProperAncestor(use.getOwner());
    });
}

/// Consecutive units [first, last], wrapped in one checkpoint (the values
/// between its units are not kept for the backward pass either), or a unit
/// left saved.
struct Segment {
  unsigned first, last;
  bool checkpointed = true;
  bool operator==(const Segment &other) const {
    return first == other.first && last == other.last &&
           checkpointed == other.checkpointed;
  }
};

/// Checkpoints the checkpointed `segments` of the `index`-th train.step of
/// `module`.
static void applyPlan(ModuleOp module, unsigned index, ArrayRef<Unit> units,
                      ArrayRef<Segment> segments) {
  SmallVector<ga::train::StepOp> steps;
  module.walk([&](ga::train::StepOp step) { steps.push_back(step); });
  Block &body = steps[index].getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (const Segment &segment : segments) {
    if (!segment.checkpointed)
      continue;
    unsigned first = units[segment.first].first;
    unsigned last = units[segment.last].last;
    wrapInCheckpoint(ArrayRef<Operation *>(ops).slice(first, last - first + 1));
  }
}

//===----------------------------------------------------------------------===//
// The chain model
//===----------------------------------------------------------------------===//
//
// The planner searches on a model of the chain of units, built from the
// tensors of the step (no compilation), and checks the plans it finds with
// the exact memory model. A plan is a sequence of pieces: a saved unit keeps
// its saved values and its boundary until its backward pass; a checkpointed
// segment keeps only its last boundary and, in the backward pass, recomputes
// all its units' values at once. In the backward pass of a piece, the
// pieces before it hold what they keep, the piece holds its values, and the
// adjoint of its boundary is alive; after the forward pass, everything kept
// plus the loss's values is alive. The model's peak is the largest of these;
// the exact peak differs by about a constant (parameters, gradients,
// arguments, the adjoints' temporaries), which the planner measures.

namespace {
struct ChainModel {
  ArrayRef<Unit> units;
  /// The bytes of the values the loss (the ops after the last unit) defines.
  int64_t tailBytes = 0;

  int64_t valuesOf(unsigned first, unsigned last) const {
    int64_t bytes = 0;
    for (unsigned i = first; i <= last; ++i)
      bytes += units[i].savedBytes + units[i].boundaryBytes;
    return bytes;
  }

  /// What the piece [first, last] keeps through the forward pass.
  int64_t kept(unsigned first, unsigned last, bool checkpointed) const {
    return checkpointed ? units[last].boundaryBytes : valuesOf(first, last);
  }

  /// The peak of the backward pass of the piece, with `before` bytes kept
  /// by the pieces before it.
  int64_t backwardPeak(int64_t before, unsigned first, unsigned last) const {
    int64_t adjoints = 0;
    for (unsigned i = first; i <= last; ++i)
      adjoints = std::max(adjoints, 2 * units[i].largestBytes);
    return before + valuesOf(first, last) + adjoints;
  }

  int64_t peakOf(ArrayRef<Segment> plan) const {
    int64_t before = 0, peak = 0;
    for (const Segment &piece : plan) {
      peak = std::max(peak, backwardPeak(before, piece.first, piece.last));
      before += kept(piece.first, piece.last, piece.checkpointed);
    }
    return std::max(peak, before + tailBytes);
  }

  double costOf(const Segment &piece) const { return costOf(ArrayRef(piece)); }

  double costOf(ArrayRef<Segment> plan) const {
    double cost = 0;
    for (const Segment &piece : plan)
      if (piece.checkpointed)
        for (unsigned i = piece.first; i <= piece.last; ++i)
          cost += units[i].cost;
    return cost;
  }

  /// The plan of least recomputation whose model peak is at most `limit`
  /// (units marked "save" saved, units marked "recompute" checkpointed), or
  /// nothing. A dynamic program over the units: at each position, the
  /// plans of the prefix that are not dominated in (bytes kept, cost).
  std::optional<SmallVector<Segment>> cheapestWithin(int64_t limit) const {
    struct State {
      int64_t kept;
      double cost;
      int parent; // index into the states of position `from`
      unsigned from;
      Segment piece;
    };
    unsigned n = units.size();
    std::vector<std::vector<State>> states(n + 1);
    states[0].push_back({0, 0, -1, 0, {0, 0, false}});
    for (unsigned i = 0; i < n; ++i) {
      // Keep the Pareto front of position i.
      std::vector<State> &front = states[i];
      llvm::sort(front, [](const State &a, const State &b) {
        return a.kept < b.kept || (a.kept == b.kept && a.cost < b.cost);
      });
      std::vector<State> pruned;
      for (const State &state : front)
        if (pruned.empty() || state.cost < pruned.back().cost)
          pruned.push_back(state);
      if (pruned.size() > 4096)
        pruned.resize(4096);
      front = std::move(pruned);
      for (auto [s, state] : llvm::enumerate(front)) {
        // A saved unit.
        if (!units[i].mustRecompute && backwardPeak(state.kept, i, i) <= limit)
          states[i + 1].push_back({state.kept + kept(i, i, false),
                                   state.cost,
                                   static_cast<int>(s),
                                   i,
                                   {i, i, false}});
        // A checkpointed segment [i, j].
        double cost = state.cost;
        for (unsigned j = i; j < n && !units[j].mustSave; ++j) {
          cost += units[j].cost;
          if (backwardPeak(state.kept, i, j) > limit)
            break;
          states[j + 1].push_back({state.kept + kept(i, j, true),
                                   cost,
                                   static_cast<int>(s),
                                   i,
                                   {i, j, true}});
        }
      }
    }
    const State *best = nullptr;
    for (const State &state : states[n])
      if (state.kept + tailBytes <= limit &&
          (!best || state.cost < best->cost ||
           (state.cost == best->cost && state.kept < best->kept)))
        best = &state;
    if (!best)
      return std::nullopt;
    SmallVector<Segment> plan;
    for (const State *state = best; state->parent >= 0;
         state = &states[state->from][state->parent])
      plan.push_back(state->piece);
    std::reverse(plan.begin(), plan.end());
    return plan;
  }

  /// The plan of the smallest model peak (the least recomputation among
  /// those): a bisection on the limit.
  SmallVector<Segment> smallest() const {
    // Every unit saved fits within its own peak (units marked "recompute"
    // checkpointed alone keep less): the search starts from there.
    SmallVector<Segment> saved;
    for (auto [i, unit] : llvm::enumerate(units))
      saved.push_back({static_cast<unsigned>(i), static_cast<unsigned>(i),
                       unit.mustRecompute});
    int64_t low = 0, high = peakOf(saved);
    std::optional<SmallVector<Segment>> plan = cheapestWithin(high);
    if (!plan)
      return {};
    while (high - low > 1) {
      int64_t mid = low + (high - low) / 2;
      if (std::optional<SmallVector<Segment>> fits = cheapestWithin(mid)) {
        high = mid;
        plan = std::move(fits);
      } else {
        low = mid;
      }
    }
    return *plan;
  }
};
} // namespace

/// The segments of `length` units (fewer at the end of a run) over the runs
/// of units that may be checkpointed (a unit marked "save" ends a run), the
/// units between them saved.
static SmallVector<Segment> segmentsOf(ArrayRef<Unit> units, unsigned length) {
  SmallVector<Segment> segments;
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

/// The bytes of a function's arguments (a budget covers them).
static int64_t argumentBytes(func::FuncOp function) {
  int64_t bytes = 0;
  for (Type type : function.getArgumentTypes())
    bytes += tensorBytes(type);
  return bytes;
}

/// The bytes of the values the ops after the last unit define (the loss).
static int64_t tailBytesOf(ga::train::StepOp step, ArrayRef<Unit> units) {
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
static double totalCostOf(ArrayRef<Unit> units) {
  double cost = 0;
  for (const Unit &unit : units)
    cost += unit.cost;
  return cost;
}

/// The elements of a step's parameters.
static int64_t parameterElements(ga::train::StepOp step) {
  int64_t elements = 0;
  for (Value param : step.getParams())
    if (auto tensor = dyn_cast<RankedTensorType>(param.getType());
        tensor && tensor.hasStaticShape())
      elements += tensor.getNumElements();
  return elements;
}

/// What the search found for one micro-batch count.
struct Outcome {
  int64_t microbatches = 1;
  int64_t unplanned = 0;
  /// Whether a plan fits; else `smallest` is the least peak reached.
  bool fits = false;
  SmallVector<Segment> plan;
  int64_t peak = 0;
  double cost = 0;
  int64_t smallest = 0;
};

namespace {
struct TrainPlanRematPass
    : ga::impl::TrainPlanRematPassBase<TrainPlanRematPass> {
  using Base::Base;

  // The planner reads what adjoints need from the interface's external
  // models: registered here too, so that the pass works in any context.
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    ga::registerDifferentiableOpInterfaceExternalModels(registry);
  }

  unsigned candidates = 0;
  double compileSeconds = 0;
  double solveSeconds = 0;

  template <typename Solve> auto timed(Solve &&solve) {
    auto start = std::chrono::steady_clock::now();
    auto result = solve();
    solveSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return result;
  }

  /// The exact peak (step buffers plus arguments, from the memory model) of
  /// `function` in `module` with the `plan` of its `index`-th step applied.
  FailureOr<int64_t> peakOf(ModuleOp module, func::FuncOp function,
                            unsigned index, ArrayRef<Unit> units,
                            ArrayRef<Segment> plan) {
    auto start = std::chrono::steady_clock::now();
    OwningOpRef<ModuleOp> copy = module.clone();
    applyPlan(*copy, index, units, plan);
    PassManager pm(module.getContext());
    std::string text =
        "ga-pipeline{buffers-only=true " + pipelineOptions.getValue() + "}";
    if (failed(parsePassPipeline(text, pm)))
      return module.emitError("train-plan-remat: cannot build '")
             << text << "'";
    if (failed(pm.run(*copy)))
      return failure();
    auto compiled = copy->lookupSymbol<func::FuncOp>(function.getSymName());
    if (!compiled)
      return function.emitError("train-plan-remat: @")
             << function.getSymName() << " is not a function after the "
             << "pipeline";
    FailureOr<ga::BufferMemoryProfile> profile =
        ga::simulateBufferMemory(compiled);
    if (failed(profile))
      return failure();
    ++candidates;
    compileSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return profile->peakBytes + argumentBytes(function);
  }

  void runOnOperation() override {
    bool automatic = microbatches == "auto";
    if (!microbatches.empty() && !automatic) {
      getOperation().emitError("train-plan-remat: microbatches must be "
                               "'auto' or empty, got '")
          << microbatches << "'";
      return signalPassFailure();
    }
    if (memoryBudget <= 0) {
      if (automatic) {
        getOperation().emitError("train-plan-remat: microbatches=auto needs "
                                 "a memory budget (memory-budget=BYTES)");
        return signalPassFailure();
      }
      return;
    }
    ModuleOp module = getOperation();
    SmallVector<ga::train::StepOp> steps;
    module.walk([&](ga::train::StepOp step) { steps.push_back(step); });
    for (auto [index, step] : llvm::enumerate(steps))
      if (failed(plan(module, index, step, automatic)))
        return signalPassFailure();
  }

  /// Writes the chain of `fullBatchUnits` at `outcome`'s micro-batch count
  /// to `exportGraph` as a ga-remat graph (see the pass's description).
  LogicalResult writeGraph(ga::train::StepOp step,
                           ArrayRef<Unit> fullBatchUnits, int64_t fullBatchTail,
                           const Outcome &outcome, double totalCost) {
    int64_t k = outcome.microbatches;
    SmallVector<Unit> units(fullBatchUnits);
    int64_t temporaries = 0;
    for (Unit &unit : units) {
      unit.boundaryBytes /= k;
      unit.savedBytes /= k;
      unit.largestBytes /= k;
      temporaries = std::max(temporaries, 2 * unit.largestBytes);
    }
    ChainModel model;
    model.units = units;
    model.tailBytes = fullBatchTail / k;
    int64_t offset = outcome.peak - model.peakOf(outcome.plan);
    llvm::json::Array nodes;
    for (auto [i, unit] : llvm::enumerate(units)) {
      std::string name = "u" + std::to_string(i);
      llvm::json::Object run{{"name", name + ".run"},
                             {"cost", unit.cost},
                             {"bytes", unit.savedBytes + unit.boundaryBytes}};
      if (i)
        run["inputs"] = llvm::json::Array{"u" + std::to_string(i - 1)};
      if (unit.mustSave)
        run["must_save"] = true;
      if (unit.mustRecompute)
        run["must_recompute"] = true;
      nodes.push_back(std::move(run));
      // Held with the run, the boundary would count twice: a saved unit
      // holds the run only (its boundary is recomputed from it for free).
      llvm::json::Object boundary{{"name", name},
                                  {"cost", 0.0},
                                  {"bytes", unit.boundaryBytes},
                                  {"inputs", llvm::json::Array{name + ".run"}}};
      nodes.push_back(std::move(boundary));
    }
    llvm::json::Object root{{"nodes", std::move(nodes)},
                            {"input_bytes", 0},
                            {"budget", memoryBudget - offset - temporaries},
                            {"microbatches", k},
                            {"forward_cost", totalCost},
                            {"planned_cost", outcome.cost},
                            {"planned_peak", outcome.peak}};
    std::error_code error;
    llvm::raw_fd_ostream os(exportGraph, error);
    if (error)
      return step.emitError("train-plan-remat: cannot write export-graph '")
             << exportGraph << "': " << error.message();
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
    return success();
  }

  /// Searches the plan of the `index`-th step at its current micro-batch
  /// count.
  FailureOr<Outcome> search(ModuleOp module, unsigned index,
                            ga::train::StepOp step, func::FuncOp function,
                            ArrayRef<Unit> fullBatchUnits,
                            int64_t fullBatchTail, bool exhaustive) {
    int64_t budget = memoryBudget;
    Outcome outcome;
    outcome.microbatches = static_cast<int64_t>(step.getMicrobatches());
    // The model sees one micro-batch: activations scale with its size.
    int64_t k = outcome.microbatches;
    SmallVector<Unit> units(fullBatchUnits);
    for (Unit &unit : units) {
      unit.boundaryBytes /= k;
      unit.savedBytes /= k;
      unit.largestBytes /= k;
    }
    ChainModel model;
    model.units = units;
    model.tailBytes = fullBatchTail / k;

    // Exact peaks by plan, each compiled once.
    SmallVector<std::pair<SmallVector<Segment>, int64_t>> measured;
    auto known = [&](ArrayRef<Segment> plan) -> const int64_t * {
      for (auto &[other, peak] : measured)
        if (ArrayRef<Segment>(other) == plan)
          return &peak;
      return nullptr;
    };
    auto exact = [&](ArrayRef<Segment> plan) -> FailureOr<int64_t> {
      if (const int64_t *peak = known(plan))
        return *peak;
      FailureOr<int64_t> peak = peakOf(module, function, index, units, plan);
      if (succeeded(peak))
        measured.push_back({SmallVector<Segment>(plan), *peak});
      return peak;
    };
    auto consider = [&](ArrayRef<Segment> plan, int64_t peak) {
      if (peak > budget)
        return;
      double cost = model.costOf(plan);
      if (!outcome.fits || cost < outcome.cost ||
          (cost == outcome.cost && peak < outcome.peak)) {
        outcome.fits = true;
        outcome.plan.assign(plan.begin(), plan.end());
        outcome.peak = peak;
        outcome.cost = cost;
      }
    };

    // Without new checkpoints (units marked "recompute" checkpointed).
    SmallVector<Segment> unplannedPlan;
    for (auto [i, unit] : llvm::enumerate(units))
      unplannedPlan.push_back({static_cast<unsigned>(i),
                               static_cast<unsigned>(i), unit.mustRecompute});
    FailureOr<int64_t> unplanned = exact(unplannedPlan);
    if (failed(unplanned))
      return failure();
    outcome.unplanned = *unplanned;
    consider(unplannedPlan, *unplanned);
    if (outcome.fits)
      return outcome;

    // The candidates: the model's cheapest plans within a fixed grid of
    // limits, from the unplanned plan's model peak down to the smallest
    // model peak, in order of cost. The list does not depend on the budget,
    // and a bisection over it (a candidate fits when its exact peak does)
    // measures log2(kLimits) of them. Larger budgets can only turn
    // "does not fit" into "fits", so the bisection of a larger budget
    // stops at the same candidate or a cheaper one: the recomputation is
    // monotone in the budget by construction, although the exact peaks
    // along the list are not (the model does not see everything that sets
    // them).
    SmallVector<Segment> least = timed([&] { return model.smallest(); });
    if (!least.empty()) {
      constexpr int64_t kLimits = 64;
      int64_t top = model.peakOf(unplannedPlan), bottom = model.peakOf(least);
      auto candidate = [&](int64_t g) -> std::optional<SmallVector<Segment>> {
        if (g == kLimits - 1)
          return least;
        int64_t limit = top - (top - bottom) * g / (kLimits - 1);
        return timed([&] { return model.cheapestWithin(limit); });
      };
      auto fits = [&](int64_t g) -> FailureOr<bool> {
        std::optional<SmallVector<Segment>> plan = candidate(g);
        if (!plan)
          return false;
        FailureOr<int64_t> peak = exact(*plan);
        if (failed(peak))
          return failure();
        consider(*plan, *peak);
        return *peak <= budget;
      };
      // The last candidate is taken to fit until the bisection ends there;
      // it is measured then (and the segments follow if it does not fit).
      int64_t low = -1, high = kLimits - 1; // high fits, low does not
      while (high - low > 1) {
        int64_t mid = low + (high - low) / 2;
        FailureOr<bool> fit = fits(mid);
        if (failed(fit))
          return failure();
        (*fit ? high : low) = mid;
      }
      if (high < kLimits - 1)
        return outcome;
      FailureOr<bool> leastFits = fits(kLimits - 1);
      if (failed(leastFits))
        return failure();
      if (*leastFits)
        return outcome;
    }
    if (outcome.fits || !exhaustive)
      return outcome;

    // When the model's plans do not fit: the model's plan of least memory,
    // then segments of 1, 2, 3, 4 and about sqrt(n) units (Chen et al.'s
    // choice on a uniform chain), every segment checkpointed; where that
    // fits, the cheapest segments first, as few as fit (a bisection on
    // their number: the peak falls as segments are added).
    auto withForced = [&](SmallVector<Segment> plan) {
      for (Segment &segment : plan)
        if (!segment.checkpointed && units[segment.first].mustRecompute)
          segment.checkpointed = true;
      return plan;
    };
    outcome.smallest = *unplanned;
    auto measure = [&](ArrayRef<Segment> plan) -> FailureOr<int64_t> {
      FailureOr<int64_t> peak = exact(plan);
      if (succeeded(peak)) {
        outcome.smallest = std::min(outcome.smallest, *peak);
        consider(plan, *peak);
      }
      return peak;
    };
    if (!least.empty() && failed(measure(withForced(least))))
      return failure();
    SmallVector<unsigned> lengths = {1, 2, 3, 4};
    unsigned root = static_cast<unsigned>(
        std::lround(std::sqrt(static_cast<double>(units.size()))));
    if (root > 4)
      lengths.push_back(root);
    for (unsigned length : lengths) {
      if (length > units.size())
        break;
      SmallVector<Segment> all = segmentsOf(units, length);
      FailureOr<int64_t> peak = measure(withForced(all));
      if (failed(peak))
        return failure();
      if (*peak > budget)
        continue;
      SmallVector<Segment> segments;
      for (const Segment &segment : all)
        if (segment.checkpointed)
          segments.push_back(segment);
      llvm::stable_sort(segments, [&](const Segment &a, const Segment &b) {
        return model.costOf(a) < model.costOf(b);
      });
      // The first `n` segments checkpointed, every other unit saved.
      auto prefix = [&](unsigned n) {
        SmallVector<Segment> chosen(segments.begin(), segments.begin() + n);
        SmallVector<Segment> plan;
        for (unsigned i = 0; i < units.size();) {
          auto it = llvm::find_if(chosen, [&](const Segment &segment) {
            return segment.first == i;
          });
          if (it != chosen.end()) {
            plan.push_back(*it);
            i = it->last + 1;
          } else {
            plan.push_back({i, i, false});
            ++i;
          }
        }
        return withForced(plan);
      };
      unsigned low = 0, high = segments.size(); // high fits, low does not
      while (high - low > 1) {
        unsigned mid = (low + high) / 2;
        FailureOr<int64_t> fits = measure(prefix(mid));
        if (failed(fits))
          return failure();
        (*fits <= budget ? high : low) = mid;
      }
    }
    return outcome;
  }

  LogicalResult plan(ModuleOp module, unsigned index, ga::train::StepOp step,
                     bool automatic) {
    candidates = 0;
    compileSeconds = 0;
    solveSeconds = 0;
    auto function = step->getParentOfType<func::FuncOp>();
    if (!function || function.isPrivate())
      return step.emitError("train-plan-remat plans steps in public "
                            "functions (the memory model simulates the "
                            "function)");
    int64_t budget = memoryBudget;
    SmallVector<Unit> units;
    int64_t tail = 0;
    timed([&] {
      units = findUnits(step);
      tail = tailBytesOf(step, units);
      return 0;
    });
    double totalCost = totalCostOf(units);
    auto percent = [&](double cost) {
      return llvm::formatv("{0:F1}", totalCost ? 100 * cost / totalCost : 0.0)
          .str();
    };

    // The micro-batch counts to try: the step's, or every divisor of the
    // batch per rank (in increasing order) when choosing.
    SmallVector<int64_t> counts = {
        static_cast<int64_t>(step.getMicrobatches())};
    int64_t perRank = 0;
    if (automatic) {
      std::optional<int64_t> batch;
      for (Value operand : step.getBatch())
        if (auto tensor = dyn_cast<RankedTensorType>(operand.getType());
            tensor && tensor.getRank() >= 1 && !tensor.isDynamicDim(0))
          batch = tensor.getDimSize(0);
      if (!batch)
        return step.emitError("train-plan-remat: microbatches=auto needs a "
                              "static batch dimension");
      perRank = *batch / static_cast<int64_t>(step.getDataParallel());
      counts.clear();
      for (int64_t k = 1; k <= perRank; ++k)
        if (perRank % k == 0)
          counts.push_back(k);
    }
    // The estimated time of a step: forward, backward (twice the forward)
    // and the recomputed work, plus a cost per micro-batch (by default the
    // accumulation of every gradient, twice the parameters' elements).
    double perMicrobatch = microbatchCost >= 0
                               ? static_cast<double>(microbatchCost)
                               : 2.0 * parameterElements(step);
    auto timeOf = [&](const Outcome &outcome) {
      return 3 * totalCost + outcome.cost +
             perMicrobatch * outcome.microbatches;
    };
    int64_t original = step.getMicrobatches();
    std::optional<Outcome> chosen;
    SmallVector<Outcome> tried;
    for (int64_t k : counts) {
      step.setMicrobatches(k);
      // When choosing, only the largest count searches the plans of least
      // memory when the model's search fails: it is the one that reaches
      // the smallest peak.
      FailureOr<Outcome> outcome =
          search(module, index, step, function, units, tail,
                 !automatic || k == counts.back());
      if (failed(outcome)) {
        step.setMicrobatches(original);
        return failure();
      }
      tried.push_back(*outcome);
      if (outcome->fits && (!chosen || timeOf(*outcome) < timeOf(*chosen)))
        chosen = *outcome;
      // More micro-batches cannot beat a plan without recomputation.
      if (outcome->fits && outcome->cost == 0)
        break;
    }
    if (!chosen) {
      step.setMicrobatches(original);
      const Outcome &last = tried.back();
      if (automatic)
        return step.emitError("memory budget of ")
               << budget << " bytes is infeasible at every micro-batch count "
               << "(1 to " << perRank << "): the smallest peak the planner "
               << "reaches is " << last.smallest << " bytes, with "
               << last.microbatches << " micro-batches (" << units.size()
               << " units; without checkpoints " << last.unplanned << " bytes)";
      return step.emitError("memory budget of ")
             << budget << " bytes is infeasible: the smallest peak the "
             << "planner reaches is " << last.smallest << " bytes ("
             << units.size() << " units; without checkpoints " << last.unplanned
             << " bytes); raise the budget or split the "
             << "batch into more micro-batches";
    }
    step.setMicrobatches(chosen->microbatches);
    applyPlan(module, index, units, chosen->plan);
    if (!exportGraph.empty() &&
        failed(writeGraph(step, units, tail, *chosen, totalCost)))
      return failure();

    unsigned count = 0, checkpoints = 0;
    for (const Segment &segment : chosen->plan)
      if (segment.checkpointed) {
        ++checkpoints;
        count += segment.last - segment.first + 1;
      }
    std::string why;
    if (automatic) {
      llvm::raw_string_ostream os(why);
      os << "microbatches " << chosen->microbatches << " chosen of";
      for (const Outcome &outcome : tried) {
        os << " k=" << outcome.microbatches << ": ";
        if (outcome.fits)
          os << percent(outcome.cost) << "% recomputed, time "
             << llvm::formatv("{0:E2}", timeOf(outcome)).str() << ";";
        else if (outcome.smallest)
          os << "over the budget (at least " << outcome.smallest << " bytes);";
        else
          os << "no plan found within the budget;";
      }
      os << " ";
    }
    Builder builder(step.getContext());
    step->setAttr(
        "train.memory_plan",
        builder.getDictionaryAttr(
            {builder.getNamedAttr("budget", builder.getI64IntegerAttr(budget)),
             builder.getNamedAttr("peak",
                                  builder.getI64IntegerAttr(chosen->peak)),
             builder.getNamedAttr("unplanned",
                                  builder.getI64IntegerAttr(chosen->unplanned)),
             builder.getNamedAttr("checkpoints",
                                  builder.getI64IntegerAttr(checkpoints)),
             builder.getNamedAttr(
                 "recomputed",
                 builder.getStringAttr(percent(chosen->cost) + "%")),
             builder.getNamedAttr(
                 "choice",
                 builder.getStringAttr(automatic ? "auto" : "fixed"))}));
    step.emitRemark() << "train-plan-remat: budget " << budget << " bytes; "
                      << why << units.size()
                      << " units; without new checkpoints " << chosen->unplanned
                      << " bytes; " << checkpoints << " checkpoints over "
                      << count << " units (recomputed " << percent(chosen->cost)
                      << "% of the forward work); planned peak " << chosen->peak
                      << " bytes; solved in "
                      << llvm::formatv("{0:F3}", solveSeconds).str() << " s; "
                      << candidates << " plans compiled and measured in "
                      << llvm::formatv("{0:F1}", compileSeconds).str() << " s";
    return success();
  }
};
} // namespace
