//===- PlanRemat.cpp - Checkpoints that fit a step into a memory budget ---===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Rematerialization under a budget in bytes. The forward part of a step body
// is cut into units where a single activation is alive (a transformer's
// residual stream between and inside blocks); the planner chooses which
// units become `train.checkpoint` regions. Every candidate plan is compiled
// on a copy by the CPU pipeline up to its buffers and measured by the memory
// model (ga/Analysis/BufferMemory.h), which predicts the runtime's count
// to the byte: a plan is used only if the model says it fits.
//
// The search: no checkpoint if that fits; the smallest feasible peak (every
// unit checkpointed) or an error stating it; otherwise the cheapest units
// first (by the work of their linalg operations), as few of them as fit,
// found by bisection on their number (the peak falls as units are added).
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/BufferMemory.h"
#include "ga/Transforms/Passes.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>

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
    for (Value value : live)
      alive += !isa<BlockArgument>(value);
    if (alive != 1)
      continue;
    Unit unit{start, static_cast<unsigned>(i), 0};
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
  return units;
}

/// Wraps ops [first, last] of `body` (given as `ops`) in a train.checkpoint
/// whose inputs are the values they read from outside and whose results are
/// the values read after them.
static void wrapInCheckpoint(ArrayRef<Operation *> ops) {
  llvm::SmallPtrSet<Operation *, 32> inside;
  for (Operation *op : ops)
    op->walk([&](Operation *inner) { inside.insert(inner); });
  llvm::SetVector<Value> inputs;
  for (Operation *op : ops)
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        Operation *definer = operand.getDefiningOp();
        Operation *owner =
            definer ? definer
                    : cast<BlockArgument>(operand).getOwner()->getParentOp();
        if (!inside.contains(owner))
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
  for (Operation *op : ops)
    op->moveBefore(block, block->end());
  for (auto [i, argument] : llvm::enumerate(block->getArguments()))
    Value(inputs[i]).replaceUsesWithIf(argument, [&](OpOperand &use) {
      return checkpoint->isProperAncestor(use.getOwner());
    });
  b.setInsertionPointToEnd(block);
  ga::train::YieldOp::create(b, checkpoint.getLoc(), outputs);
  for (auto [output, result] : llvm::zip(outputs, checkpoint.getResults()))
    output.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !checkpoint->isProperAncestor(use.getOwner());
    });
}

/// Consecutive units [first, last], wrapped in one checkpoint: the values
/// between its units are not kept for the backward pass either.
struct Segment {
  unsigned first, last;
};

/// Checkpoints the `segments` of the `index`-th train.step of `module`.
static void applyPlan(ModuleOp module, unsigned index, ArrayRef<Unit> units,
                      ArrayRef<Segment> segments) {
  SmallVector<ga::train::StepOp> steps;
  module.walk([&](ga::train::StepOp step) { steps.push_back(step); });
  Block &body = steps[index].getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (const Segment &segment : segments) {
    unsigned first = units[segment.first].first;
    unsigned last = units[segment.last].last;
    wrapInCheckpoint(ArrayRef<Operation *>(ops).slice(first, last - first + 1));
  }
}

/// The segments of `length` units (fewer at the end of a run) over the runs
/// of units that may be checkpointed (a unit marked "save" ends a run).
static SmallVector<Segment> segmentsOf(ArrayRef<Unit> units, unsigned length) {
  SmallVector<Segment> segments;
  unsigned i = 0;
  while (i < units.size()) {
    if (units[i].mustSave) {
      ++i;
      continue;
    }
    unsigned first = i;
    while (i < units.size() && !units[i].mustSave && i - first < length)
      ++i;
    segments.push_back({first, i - 1});
  }
  return segments;
}

/// The bytes of a function's arguments (a budget covers them).
static int64_t argumentBytes(func::FuncOp function) {
  int64_t bytes = 0;
  for (Type type : function.getArgumentTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.hasStaticShape())
      if (std::optional<int64_t> size = ga::allocationBytes(
              MemRefType::get(tensor.getShape(), tensor.getElementType()), 0))
        bytes += *size;
  return bytes;
}

namespace {
struct TrainPlanRematPass
    : ga::impl::TrainPlanRematPassBase<TrainPlanRematPass> {
  using Base::Base;

  unsigned candidates = 0;

  /// The modelled peak (step buffers plus arguments) of `function` in
  /// `module` with the `segments` of its `index`-th step checkpointed.
  FailureOr<int64_t> peakOf(ModuleOp module, func::FuncOp function,
                            unsigned index, ArrayRef<Unit> units,
                            ArrayRef<Segment> segments) {
    OwningOpRef<ModuleOp> copy = module.clone();
    applyPlan(*copy, index, units, segments);
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
    return profile->peakBytes + argumentBytes(function);
  }

  void runOnOperation() override {
    if (memoryBudget <= 0)
      return;
    ModuleOp module = getOperation();
    SmallVector<ga::train::StepOp> steps;
    module.walk([&](ga::train::StepOp step) { steps.push_back(step); });
    for (auto [index, step] : llvm::enumerate(steps))
      if (failed(plan(module, index, step)))
        return signalPassFailure();
  }

  LogicalResult plan(ModuleOp module, unsigned index, ga::train::StepOp step) {
    candidates = 0;
    auto start = std::chrono::steady_clock::now();
    auto function = step->getParentOfType<func::FuncOp>();
    if (!function || function.isPrivate())
      return step.emitError("train-plan-remat plans steps in public "
                            "functions (the memory model simulates the "
                            "function)");
    SmallVector<Unit> units = findUnits(step);
    double totalCost = 0;
    for (const Unit &unit : units)
      totalCost += unit.cost;
    auto costOf = [&](const Segment &segment) {
      double cost = 0;
      for (unsigned i = segment.first; i <= segment.last; ++i)
        cost += units[i].cost;
      return cost;
    };
    // Units marked "recompute" are checkpointed in every plan, each alone
    // unless a chosen segment holds it.
    auto withForced = [&](SmallVector<Segment> chosen) {
      for (auto [i, unit] : llvm::enumerate(units)) {
        if (!unit.mustRecompute)
          continue;
        if (llvm::none_of(chosen, [&](const Segment &s) {
              return s.first <= i && i <= s.last;
            }))
          chosen.push_back(
              {static_cast<unsigned>(i), static_cast<unsigned>(i)});
      }
      llvm::sort(chosen, [](const Segment &a, const Segment &b) {
        return a.first < b.first;
      });
      return chosen;
    };
    int64_t budget = memoryBudget;
    SmallVector<Segment> none = withForced({});
    FailureOr<int64_t> unplanned = peakOf(module, function, index, units, none);
    if (failed(unplanned))
      return failure();
    auto report = [&](ArrayRef<Segment> chosen, int64_t peak) {
      unsigned count = 0;
      double cost = 0;
      for (const Segment &segment : chosen) {
        count += segment.last - segment.first + 1;
        cost += costOf(segment);
      }
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      step.emitRemark()
          << "train-plan-remat: budget " << budget << " bytes; " << units.size()
          << " units; without "
          << "new checkpoints " << *unplanned << " bytes; " << chosen.size()
          << " checkpoints over " << count << " units (recomputed "
          << llvm::formatv("{0:F1}", totalCost ? 100 * cost / totalCost : 0.0)
                 .str()
          << "% of the forward work); planned peak " << peak << " bytes; "
          << candidates << " candidates compiled in "
          << llvm::formatv("{0:F1}", seconds).str() << " s";
    };
    if (*unplanned <= budget) {
      applyPlan(module, index, units, none);
      report(none, *unplanned);
      return success();
    }
    // Segments of 1, 2, 3, 4 units and of about sqrt(n) (Chen et al.'s
    // choice for a uniform chain): every segment of a length checkpointed
    // gives that length's smallest peak.
    SmallVector<unsigned> lengths = {1, 2, 3, 4};
    unsigned root = static_cast<unsigned>(
        std::lround(std::sqrt(static_cast<double>(units.size()))));
    if (root > 4)
      lengths.push_back(root);
    int64_t smallest = *unplanned;
    unsigned smallestLength = 0;
    struct Choice {
      SmallVector<Segment> segments;
      int64_t peak;
      double cost;
    };
    std::optional<Choice> best;
    for (unsigned length : lengths) {
      if (length > units.size())
        break;
      SmallVector<Segment> segments = segmentsOf(units, length);
      FailureOr<int64_t> all =
          peakOf(module, function, index, units, withForced(segments));
      if (failed(all))
        return failure();
      if (*all < smallest) {
        smallest = *all;
        smallestLength = length;
      }
      if (*all > budget)
        continue;
      // The cheapest segments first; bisect on how many fit.
      llvm::stable_sort(segments, [&](const Segment &a, const Segment &b) {
        return costOf(a) < costOf(b);
      });
      auto prefix = [&](unsigned n) {
        return withForced(
            SmallVector<Segment>(segments.begin(), segments.begin() + n));
      };
      unsigned low = 0, high = segments.size(); // high fits, low does not
      int64_t highPeak = *all;
      while (high - low > 1) {
        unsigned mid = (low + high) / 2;
        FailureOr<int64_t> peak =
            peakOf(module, function, index, units, prefix(mid));
        if (failed(peak))
          return failure();
        if (*peak <= budget) {
          high = mid;
          highPeak = *peak;
        } else {
          low = mid;
        }
      }
      SmallVector<Segment> chosen = prefix(high);
      double cost = 0;
      for (const Segment &segment : chosen)
        cost += costOf(segment);
      if (!best || cost < best->cost ||
          (cost == best->cost && highPeak < best->peak))
        best = Choice{chosen, highPeak, cost};
    }
    if (!best)
      return step.emitError("memory budget of ")
             << budget << " bytes is infeasible: the smallest peak the "
             << "planner reaches is " << smallest << " bytes ("
             << (smallestLength
                     ? "every segment of " + std::to_string(smallestLength) +
                           " of its " + std::to_string(units.size()) +
                           " units checkpointed"
                     : "no checkpoint of its " + std::to_string(units.size()) +
                           " units lowers it")
             << "; without checkpoints " << *unplanned
             << " bytes); raise the budget or split the batch into more "
             << "micro-batches";
    applyPlan(module, index, units, best->segments);
    report(best->segments, best->peak);
    return success();
  }
};
} // namespace
