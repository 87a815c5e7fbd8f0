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
// chain of units (ga/Remat/Segments.h: a dynamic program, milliseconds); every
// plan it proposes is compiled on a copy by the CPU pipeline up to its
// buffers and measured by the memory model (ga/Analysis/BufferMemory.h),
// which predicts the runtime's count to the byte: a plan is used only if the
// measurement says it fits. The pipeline that compiles the candidates comes
// from the pipeline that built the pass (ga/Transforms/Remat.h), or, on the
// command line, from `pipeline-options` as text.
//
//===----------------------------------------------------------------------===//

#include "RematUnits.h"
#include "ga/Analysis/BufferMemory.h"
#include "ga/Remat/Segments.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Transforms/Passes.h"
#include "ga/Transforms/Remat.h"
#include "ga/Utils/Location.h"
#include "train/MemoryPlan.h"
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
#include <limits>
#include <map>
#include <optional>

namespace ga {
#define GEN_PASS_DEF_TRAINPLANREMATPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::remat_units;
using ga::remat::Segment;
using ga::remat::SegmentPlan;

/// What the search found for one micro-batch count.
struct Outcome {
  int64_t microbatches = 1;
  int64_t unplanned = 0;
  /// Whether a plan fits; else `smallest` is the least peak reached.
  bool fits = false;
  SegmentPlan plan;
  int64_t peak = 0;
  /// The plan's estimated cost: the work it recomputes, plus `copies`, the
  /// work the device could do while host-offload's copies delay the step
  /// (ga.host_offload's exposed_work on the compiled candidate).
  double cost = 0;
  double copies = 0;
  int64_t smallest = 0;
  /// The units at one micro-batch's size, as the search modelled them
  /// (measured on the compiled step with measure-units), and the loss's.
  SmallVector<ga::remat_units::Unit> units;
  int64_t tailBytes = 0;
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

  /// The candidates' pipeline, where a pipeline built the pass.
  std::optional<ga::RematCandidatePipeline> typed;

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
  /// `function` in `module` with the `plan` of its `index`-th step applied;
  /// `where`, when given, receives where the compiled step reaches it (the
  /// allocation's location and the largest allocation sites alive then).
  FailureOr<int64_t>
  peakOf(ModuleOp module, func::FuncOp function, unsigned index,
         ArrayRef<Unit> units, const SegmentPlan &plan,
         std::string *where = nullptr, UnitTrace *trace = nullptr,
         double *copies = nullptr, bool withoutOffload = false) {
    auto start = std::chrono::steady_clock::now();
    OwningOpRef<ModuleOp> copy = module.clone();
    if (trace)
      tagUnits(*copy, index, units);
    applyPlan(*copy, index, units, plan);
    PassManager pm(module.getContext());
    if (failed(buildCandidatePipeline(pm, module, withoutOffload)))
      return failure();
    if (failed(pm.run(*copy)))
      return failure();
    auto compiled = copy->lookupSymbol<func::FuncOp>(function.getSymName());
    if (!compiled)
      return function.emitError("train-plan-remat: @")
             << function.getSymName() << " is not a function after the "
             << "pipeline";
    FailureOr<ga::BufferMemoryProfile> profile =
        ga::simulateBufferMemory(compiled, trace);
    if (failed(profile))
      return failure();
    // host-offload: what its copies are estimated to cost.
    if (copies)
      if (auto offload =
              compiled->getAttrOfType<DictionaryAttr>("ga.host_offload"))
        if (auto work = offload.getAs<FloatAttr>("exposed_work"))
          *copies = work.getValueAsDouble();
    if (where && profile->peakAt) {
      llvm::raw_string_ostream os(*where);
      os << "reached at ";
      ga::printLocation(os, profile->peakAt->getLoc());
      os << " with " << profile->liveAtPeak.size()
         << " allocation sites alive, the largest:";
      for (auto [i, live] :
           llvm::enumerate(ArrayRef(profile->liveAtPeak).take_front(3))) {
        os << (i ? ", " : " ") << live.bytes << " bytes (" << live.count
           << ") made at ";
        ga::printLocation(os, live.alloc->getLoc());
      }
    }
    ++candidates;
    compileSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (deviceAllocator) {
      SmallVector<int64_t> inputs;
      for (Type type : function.getArgumentTypes())
        inputs.push_back(tensorBytes(type));
      return ga::cachingAllocatorBytes(*profile, inputs) + deviceFixedBytes;
    }
    return profile->peakBytes + argumentBytes(function);
  }

  /// The candidates' pipeline into `pm`: the typed one, or from the
  /// command line the registered ga-pipeline with `pipeline-options`.
  LogicalResult buildCandidatePipeline(PassManager &pm, ModuleOp module,
                                       bool withoutOffload) {
    if (typed) {
      std::string error;
      if (failed(typed->build(pm, withoutOffload, error)))
        return module.emitError("train-plan-remat: the candidates' "
                                "pipeline: ")
               << error;
      return success();
    }
    // The last occurrence of an option wins.
    std::string text = "ga-pipeline{buffers-only=true " +
                       pipelineOptions.getValue() +
                       (withoutOffload ? " host-offload=false" : "") + "}";
    if (failed(parsePassPipeline(text, pm)))
      return module.emitError("train-plan-remat: cannot build '")
             << text << "'";
    return success();
  }

  void runOnOperation() override {
    bool automatic = microbatches == "auto";
    if (std::string error = ga::checkRematOptions(memoryBudget, microbatches);
        !error.empty()) {
      getOperation().emitError("train-plan-remat: ") << error;
      return signalPassFailure();
    }
    if (deviceFixedBytes < 0 || (deviceFixedBytes > 0 && !deviceAllocator)) {
      getOperation().emitError("train-plan-remat: device-fixed-bytes must "
                               "be at least 0, and needs "
                               "device-allocator=true; got ")
          << static_cast<int64_t>(deviceFixedBytes)
          << " with device-allocator=" << (deviceAllocator ? "true" : "false");
      return signalPassFailure();
    }
    if (memoryBudget <= 0)
      return;
    ModuleOp module = getOperation();
    SmallVector<ga::train::StepOp> steps;
    module.walk([&](ga::train::StepOp step) { steps.push_back(step); });
    for (auto [index, step] : llvm::enumerate(steps))
      if (failed(plan(module, index, step, automatic)))
        return signalPassFailure();
  }

  /// `fullBatchUnits` at `k` micro-batches: their activations' bytes over k.
  static SmallVector<Unit> perMicrobatch(ArrayRef<Unit> fullBatchUnits,
                                         int64_t k) {
    SmallVector<Unit> units(fullBatchUnits);
    for (Unit &unit : units) {
      unit.boundaryBytes /= k;
      unit.savedBytes /= k;
      unit.largestBytes /= k;
      unit.transientBytes /= k;
    }
    return units;
  }

  /// Writes the chain of `fullBatchUnits` at `outcome`'s micro-batch count
  /// to `exportGraph` as a ga-remat graph (see the pass's description).
  LogicalResult writeGraph(ga::train::StepOp step, const Outcome &outcome,
                           double totalCost) {
    int64_t k = outcome.microbatches;
    ArrayRef<Unit> units = outcome.units;
    ga::remat::SegmentChain model = chainOf(units, outcome.tailBytes);
    int64_t offset = outcome.peak - model.peakOf(outcome.plan);
    // What the chosen plan holds, marked "checkpoint" (ga-remat's warm
    // start): a saved unit's run, a checkpointed segment's last boundary.
    SmallVector<bool> holdsRun(units.size(), false),
        holdsBoundary(units.size(), false);
    for (const Segment &piece : outcome.plan) {
      if (piece.checkpointed)
        holdsBoundary[piece.last] = true;
      else
        for (unsigned i = piece.first; i <= piece.last; ++i)
          holdsRun[i] = true;
    }
    llvm::json::Array nodes;
    for (auto [i, unit] : llvm::enumerate(units)) {
      std::string name = "u" + std::to_string(i);
      // The run holds what the unit keeps, its boundary included (held
      // with the run, the boundary would count twice: a saved unit holds
      // the run only, its boundary is recomputed from it for free); the
      // stage of its adjoints, its values and what its backward pass adds,
      // as the chain model counts them.
      int64_t values =
          std::max<int64_t>(0, unit.savedBytes + unit.boundaryBytes);
      llvm::json::Object run{{"name", name + ".run"},
                             {"cost", unit.cost},
                             {"bytes", values},
                             {"stage_bytes", values + unit.adjoints()},
                             {"forward_bytes", unit.transientBytes}};
      if (i)
        run["inputs"] = llvm::json::Array{"u" + std::to_string(i - 1)};
      if (unit.mustSave)
        run["must_save"] = true;
      if (unit.mustRecompute)
        run["must_recompute"] = true;
      if (holdsRun[i])
        run["checkpoint"] = true;
      nodes.push_back(std::move(run));
      llvm::json::Object boundary{{"name", name},
                                  {"cost", 0.0},
                                  {"bytes", unit.boundaryBytes},
                                  {"inputs", llvm::json::Array{name + ".run"}}};
      if (holdsBoundary[i])
        boundary["checkpoint"] = true;
      // The last boundary is reversed first, in the stage where the loss
      // runs: what the loss holds is that stage's.
      if (i + 1 == units.size() && outcome.tailBytes > 0)
        boundary["stage_bytes"] = outcome.tailBytes;
      nodes.push_back(std::move(boundary));
    }
    llvm::json::Object root{{"nodes", std::move(nodes)},
                            {"input_bytes", 0},
                            {"budget", memoryBudget - offset},
                            {"microbatches", k},
                            {"forward_cost", totalCost},
                            {"planned_cost", outcome.cost - outcome.copies},
                            {"planned_peak", outcome.peak}};
    std::error_code error;
    llvm::raw_fd_ostream os(exportGraph, error);
    if (error)
      return step.emitError("train-plan-remat: cannot write export-graph '")
             << exportGraph << "': " << error.message();
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
    return success();
  }

  /// What one search keeps: the units at one micro-batch's size, their
  /// model, the exact peaks measured so far (each plan compiled once), and
  /// the best plan within the budget.
  struct Search {
    ModuleOp module;
    unsigned index;
    func::FuncOp function;
    SmallVector<Unit> units;
    ga::remat::SegmentChain model;
    int64_t budget;
    /// With measured units, the model built from the tensors alone.
    std::optional<ga::remat::SegmentChain> tensorModel = std::nullopt;
    /// Each plan measured: its exact peak and its copies' cost.
    struct Measured {
      SegmentPlan plan;
      int64_t peak;
      double copies;
    };
    SmallVector<Measured> measured;
    Outcome outcome;

    /// `plan`'s measurement, if it was measured.
    const Measured *find(const SegmentPlan &plan) const {
      for (const Measured &other : measured)
        if (other.plan == plan)
          return &other;
      return nullptr;
    }

    /// The copies' cost of `plan`, measured (0 if it was not).
    double copiesOf(const SegmentPlan &plan) const {
      const Measured *found = find(plan);
      return found ? found->copies : 0;
    }

    /// Keeps `plan` if it fits and is cheaper (or as cheap and smaller).
    void consider(const SegmentPlan &plan, int64_t peak) {
      if (peak > budget)
        return;
      double copies = copiesOf(plan);
      double cost = model.costOf(plan) + copies;
      if (!outcome.fits || cost < outcome.cost ||
          (cost == outcome.cost && peak < outcome.peak)) {
        outcome.fits = true;
        outcome.plan.assign(plan.begin(), plan.end());
        outcome.peak = peak;
        outcome.cost = cost;
        outcome.copies = copies;
      }
    }

    /// `plan` with the units marked "recompute" checkpointed.
    SegmentPlan withForced(SegmentPlan plan) const {
      for (Segment &segment : plan)
        if (!segment.checkpointed && units[segment.first].mustRecompute)
          segment.checkpointed = true;
      return plan;
    }
  };

  /// The plan that checkpoints `segments` (disjoint, in any order) and
  /// leaves every other unit alone: saved, or checkpointed when marked
  /// "recompute".
  static SegmentPlan planWith(ArrayRef<Unit> units,
                              ArrayRef<Segment> segments) {
    SegmentPlan plan;
    for (unsigned i = 0; i < units.size();) {
      const Segment *segment = llvm::find_if(
          segments, [&](const Segment &segment) { return segment.first == i; });
      if (segment != segments.end()) {
        plan.push_back(*segment);
        i = segment->last + 1;
      } else {
        plan.push_back({i, i, units[i].mustRecompute});
        ++i;
      }
    }
    return plan;
  }

  /// Whether the candidates are compiled with host-offload (the typed
  /// pipeline's, or the options' text, the last occurrence winning).
  bool offloads() const {
    if (typed)
      return typed->hostOffload;
    StringRef options = pipelineOptions.getValue();
    size_t on = options.rfind("host-offload=true");
    size_t off = options.rfind("host-offload=false");
    return on != StringRef::npos && (off == StringRef::npos || off < on);
  }

  /// The checkpointed segments of `plan` and the units they cover.
  static std::pair<unsigned, unsigned> checkpointsOf(const SegmentPlan &plan) {
    unsigned checkpoints = 0, units = 0;
    for (const Segment &segment : plan)
      if (segment.checkpointed) {
        ++checkpoints;
        units += segment.last - segment.first + 1;
      }
    return {checkpoints, units};
  }

  /// `plan` as text: its checkpointed segments, "[first-last]" each.
  static std::string describe(const SegmentPlan &plan) {
    std::string text;
    for (const Segment &segment : plan)
      if (segment.checkpointed)
        text += "[" + std::to_string(segment.first) + "-" +
                std::to_string(segment.last) + "]";
    return text.empty() ? "none" : text;
  }

  /// The exact peak of `plan`, compiled once (`trace`, when given, follows
  /// its simulation).
  FailureOr<int64_t> exact(Search &search, const SegmentPlan &plan,
                           UnitTrace *trace = nullptr) {
    if (const Search::Measured *found = search.find(plan))
      return found->peak;
    std::string where;
    double copies = 0;
    FailureOr<int64_t> peak =
        peakOf(search.module, search.function, search.index, search.units, plan,
               reportPlans ? &where : nullptr, trace, &copies);
    if (failed(peak))
      return failure();
    search.measured.push_back({plan, *peak, copies});
    if (reportPlans) {
      auto [checkpoints, units] = checkpointsOf(plan);
      double total = totalCostOf(search.units);
      search.function.emitRemark()
          << "train-plan-remat: plan " << search.measured.size() << " at "
          << search.outcome.microbatches << " micro-batch(es): " << checkpoints
          << " checkpoints over " << units << " units, recomputed "
          << llvm::formatv("{0:F1}",
                           total ? 100 * search.model.costOf(plan) / total
                                 : 0.0)
                 .str()
          << "%"
          << (copies > 0 ? ", copies " +
                               llvm::formatv("{0:F1}",
                                             total ? 100 * copies / total : 0.0)
                                   .str() +
                               "%"
                         : std::string())
          << ", pieces " << describe(plan) << ", model peak "
          << search.model.peakOf(plan) << " bytes, exact "
          << "peak " << *peak << " bytes, "
          << (*peak <= search.budget ? "fits" : "over the budget")
          << (where.empty() ? "" : "; the peak " + where);
    }
    return peak;
  }

  /// The candidates: the model's cheapest plans within a fixed grid of
  /// limits, from the unplanned plan's model peak down to the smallest
  /// model peak, in order of cost. The list does not depend on the budget,
  /// and a bisection over it (a candidate fits when its exact peak does)
  /// measures log2(kLimits) of them. Larger budgets can only turn "does not
  /// fit" into "fits", so the bisection of a larger budget stops at the
  /// same candidate or a cheaper one: the recomputation is monotone in the
  /// budget by construction, although the exact peaks along the list are
  /// not (the model does not see everything that sets them). Returns
  /// whether a candidate fits; `least` is the model's smallest plan.
  FailureOr<bool> searchModelPlans(Search &search,
                                   const ga::remat::SegmentChain &model,
                                   const SegmentPlan &unplannedPlan,
                                   SegmentPlan &least) {
    least = timed([&] { return model.smallest(); });
    if (least.empty())
      return false;
    constexpr int64_t kLimits = 64;
    int64_t top = model.peakOf(unplannedPlan), bottom = model.peakOf(least);
    std::map<int64_t, std::optional<SegmentPlan>> solved;
    auto candidate = [&](int64_t g) -> const std::optional<SegmentPlan> & {
      auto it = solved.find(g);
      if (it != solved.end())
        return it->second;
      std::optional<SegmentPlan> plan = least;
      if (g != kLimits - 1) {
        int64_t limit = top - (top - bottom) * g / (kLimits - 1);
        plan = timed([&] { return model.cheapestWithin(limit); });
      }
      return solved.emplace(g, std::move(plan)).first->second;
    };
    auto fits = [&](int64_t g) -> FailureOr<bool> {
      const std::optional<SegmentPlan> &plan = candidate(g);
      if (!plan)
        return false;
      FailureOr<int64_t> peak = exact(search, *plan);
      if (failed(peak))
        return failure();
      search.consider(*plan, *peak);
      // A plan that fits only with copies that delay the step is
      // considered, but the bisection looks for the cheapest that fits
      // without them (with host-offload, nearly every plan fits).
      return *peak <= search.budget && search.copiesOf(*plan) == 0;
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
    if (high == kLimits - 1) {
      FailureOr<bool> fit = fits(kLimits - 1);
      if (failed(fit) || !*fit)
        return fit;
    }
    // The exact peaks along the list are not ordered, so the bisection may
    // stop above a cheaper candidate that fits: the kWindow distinct plans
    // of the list before the one found are measured in order of cost, and the
    // first that fits becomes the one found, until a window holds none. Still
    // monotone in the budget: a plan that fits one budget fits a larger one,
    // and lies in the window below the larger budget's result unless that
    // result is already as cheap (induction over the rounds of the smaller
    // budget).
    constexpr size_t kWindow = 8;
    for (bool lowered = true; lowered;) {
      lowered = false;
      // Walking down from the one found (a plan holds a run of places: it
      // stays the cheapest as the limit falls while it fits), the first
      // place of each of the kWindow plans before it.
      SmallVector<int64_t> window;
      const SegmentPlan found = *candidate(high);
      for (int64_t g = high - 1; g >= 0; --g) {
        const std::optional<SegmentPlan> &plan = candidate(g);
        if (!plan || *plan == found)
          continue;
        if (!window.empty() && *candidate(window.back()) == *plan)
          window.back() = g;
        else if (window.size() == kWindow)
          break;
        else
          window.push_back(g);
      }
      for (int64_t g : llvm::reverse(window)) {
        FailureOr<bool> fit = fits(g);
        if (failed(fit))
          return failure();
        if (*fit) {
          high = g;
          lowered = true;
          break;
        }
      }
    }
    // With host-offload, a plan that fits only with copies that do not
    // hide may cost more than one that recomputes more: while some plan
    // measured does, up to kWindow more plans of the list that recompute
    // less than the best cost so far, the dearest first (those nearest the
    // best plan need the fewest copies).
    bool paidCopies =
        llvm::any_of(search.measured, [&](const Search::Measured &m) {
          return m.copies > 0 && m.peak <= search.budget &&
                 search.model.costOf(m.plan) < search.outcome.cost;
        });
    if (search.outcome.fits && paidCopies) {
      unsigned scanned = 0;
      for (int64_t g = kLimits - 1; g >= 0 && scanned < kWindow; --g) {
        const std::optional<SegmentPlan> &plan = candidate(g);
        if (!plan || search.find(*plan) ||
            search.model.costOf(*plan) >= search.outcome.cost)
          continue;
        ++scanned;
        if (failed(fits(g)))
          return failure();
      }
    }
    return true;
  }

  /// When the model's plans do not fit: the model's plan of least memory,
  /// then segments of 1, 2, 3, 4 and about sqrt(n) units (Chen et al.'s
  /// choice on a uniform chain), every segment checkpointed; where that
  /// fits, the cheapest segments first, as few as fit (a bisection on their
  /// number: the peak falls as segments are added). Every plan measured
  /// lowers `outcome.smallest`.
  LogicalResult searchSegments(Search &search, const SegmentPlan &least) {
    ArrayRef<Unit> units = search.units;
    auto measure = [&](const SegmentPlan &plan) -> FailureOr<int64_t> {
      FailureOr<int64_t> peak = exact(search, plan);
      if (succeeded(peak)) {
        search.outcome.smallest = std::min(search.outcome.smallest, *peak);
        search.consider(plan, *peak);
      }
      return peak;
    };
    if (!least.empty() && failed(measure(search.withForced(least))))
      return failure();
    // The smallest plan of the model built from the tensors alone too,
    // where the units were measured: the measured model is exact for the
    // unplanned step, not for every plan, and the smallest plans are where
    // the two part most.
    if (search.tensorModel) {
      SegmentPlan other = timed([&] { return search.tensorModel->smallest(); });
      if (!other.empty() && failed(measure(search.withForced(other))))
        return failure();
    }
    SmallVector<unsigned> lengths = {1, 2, 3, 4};
    unsigned root = static_cast<unsigned>(
        std::lround(std::sqrt(static_cast<double>(units.size()))));
    if (root > 4)
      lengths.push_back(root);
    for (unsigned length : lengths) {
      if (length > units.size())
        break;
      SegmentPlan all = segmentsOf(units, length);
      FailureOr<int64_t> peak = measure(search.withForced(all));
      if (failed(peak))
        return failure();
      if (*peak > search.budget)
        continue;
      SegmentPlan segments;
      for (const Segment &segment : all)
        if (segment.checkpointed)
          segments.push_back(segment);
      llvm::stable_sort(segments, [&](const Segment &a, const Segment &b) {
        return search.model.costOf({a}) < search.model.costOf({b});
      });
      // The first `n` segments checkpointed, every other unit saved.
      auto prefix = [&](unsigned n) {
        return planWith(units, ArrayRef(segments).take_front(n));
      };
      unsigned low = 0, high = segments.size(); // high fits, low does not
      while (high - low > 1) {
        unsigned mid = (low + high) / 2;
        FailureOr<int64_t> fits = measure(prefix(mid));
        if (failed(fits))
          return failure();
        (*fits <= search.budget ? high : low) = mid;
      }
    }
    return success();
  }

  /// Searches the plan of the `index`-th step at its current micro-batch
  /// count: without new checkpoints, then the model's plans, then (when
  /// `exhaustive`) fixed segments.
  FailureOr<Outcome> search(ModuleOp module, unsigned index,
                            ga::train::StepOp step, func::FuncOp function,
                            ArrayRef<Unit> fullBatchUnits,
                            int64_t fullBatchTail, bool exhaustive) {
    // The model sees one micro-batch: activations scale with its size.
    int64_t k = static_cast<int64_t>(step.getMicrobatches());
    SmallVector<Unit> units = perMicrobatch(fullBatchUnits, k);
    Search search{module,
                  index,
                  function,
                  units,
                  chainOf(units, fullBatchTail / k),
                  static_cast<int64_t>(memoryBudget),
                  {},
                  {}};
    Outcome &outcome = search.outcome;
    outcome.microbatches = k;
    outcome.units = units;
    outcome.tailBytes = fullBatchTail / k;

    // Without new checkpoints (units marked "recompute" checkpointed).
    SegmentPlan unplannedPlan = planWith(units, {});
    UnitTrace trace(units.size());
    FailureOr<int64_t> unplanned = failure();
    if (measureUnits && offloads()) {
      // The units are measured on the step's own buffers: compiled without
      // host-offload, which would free some of them for a stretch.
      if (failed(peakOf(module, function, index, units, unplannedPlan, nullptr,
                        &trace, nullptr, /*withoutOffload=*/true)))
        return failure();
      unplanned = exact(search, unplannedPlan);
    } else {
      unplanned = exact(search, unplannedPlan, measureUnits ? &trace : nullptr);
    }
    if (failed(unplanned))
      return failure();
    if (measureUnits) {
      int64_t modelled = search.model.peakOf(unplannedPlan);
      int64_t tail = outcome.tailBytes;
      bool measured = trace.calibrate(search.units, tail);
      if (measured) {
        search.tensorModel = search.model;
        search.model = chainOf(search.units, tail);
        outcome.units = search.units;
        outcome.tailBytes = tail;
      }
      if (reportPlans) {
        InFlightDiagnostic remark = function.emitRemark();
        remark << "train-plan-remat: at " << k << " micro-batch(es), ";
        if (!measured) {
          remark << "the units were not measured (the compiled step does "
                 << "not show them); the model's unplanned peak is " << modelled
                 << " bytes";
        } else {
          int64_t modelledKept = 0, keptBytes = 0;
          for (auto [unit, bytes] : llvm::zip(units, trace.keptBytes())) {
            modelledKept += unit.savedBytes + unit.boundaryBytes;
            keptBytes += bytes;
          }
          remark << "the units measured on the step without new "
                 << "checkpoints keep " << keptBytes << " bytes (modelled "
                 << modelledKept << "), the loss holds " << tail
                 << " bytes more; the model's unplanned peak is "
                 << search.model.peakOf(unplannedPlan) << " bytes (was "
                 << modelled << "), the exact one " << *unplanned;
          for (auto [i, unit] : llvm::enumerate(search.units))
            remark.attachNote(unit.boundary.getLoc())
                << "unit " << i << " measured: keeps "
                << unit.savedBytes + unit.boundaryBytes << " bytes, "
                << unit.transientBytes << " while it runs, " << unit.adjoints()
                << " more in its backward pass, " << unit.liftBytes
                << " more alive when it is reached";
        }
      }
    }
    outcome.unplanned = *unplanned;
    search.consider(unplannedPlan, *unplanned);
    // Without recomputation, and without copies that delay the step: no
    // plan is cheaper.
    if (outcome.fits && outcome.cost == 0)
      return outcome;

    SegmentPlan least;
    FailureOr<bool> found =
        searchModelPlans(search, search.model, unplannedPlan, least);
    if (failed(found))
      return failure();
    // Where none of the measured model's candidates fits (its bytes are
    // the unplanned step's, and a plan's may part from them), the model
    // built from the tensors proposes its own; not where every plan
    // measured so far is more than a quarter over the budget (the
    // micro-batch counts too small for it, which a choice of k tries
    // first): the models part by less.
    int64_t closest = std::numeric_limits<int64_t>::max();
    for (const Search::Measured &other : search.measured)
      closest = std::min(closest, other.peak);
    if (!*found && !outcome.fits && search.tensorModel &&
        closest <= search.budget + search.budget / 4) {
      SegmentPlan tensorLeast;
      found = searchModelPlans(search, *search.tensorModel, unplannedPlan,
                               tensorLeast);
      if (failed(found))
        return failure();
    }
    // Where the best plan pays for copies, the fixed segments are measured
    // too: a plan that fits without copies may lie outside the model's
    // list, whose plans all fit once offloaded.
    bool paysCopies = outcome.fits && outcome.copies > 0;
    if (!paysCopies && (*found || outcome.fits || !exhaustive))
      return outcome;
    if (!outcome.fits)
      outcome.smallest = *unplanned;
    if (failed(searchSegments(search, least)))
      return failure();
    return outcome;
  }

  /// `plan=...` (unit ranges "a-b" or "a", increasing, disjoint, by
  /// commas): that plan at the step's micro-batch count, measured; an
  /// error where it does not parse or does not fit the budget.
  FailureOr<Outcome> measureGiven(ModuleOp module, unsigned index,
                                  ga::train::StepOp step, func::FuncOp function,
                                  ArrayRef<Unit> fullBatchUnits,
                                  int64_t fullBatchTail) {
    if (microbatches == "auto")
      return step.emitError("train-plan-remat: plan='")
             << fixedPlan << "' applies a plan at the step's micro-batch "
             << "count; it cannot be given with microbatches=auto";
    unsigned n = fullBatchUnits.size();
    SmallVector<Segment> given;
    SmallVector<StringRef> pieces;
    StringRef(fixedPlan).split(pieces, ',', -1, /*KeepEmpty=*/false);
    for (StringRef piece : pieces) {
      auto [from, to] = piece.trim().split('-');
      unsigned first = 0, last = 0;
      bool bad = from.trim().getAsInteger(10, first);
      if (to.empty())
        last = first;
      else
        bad |= to.trim().getAsInteger(10, last);
      if (bad || last < first || last >= n ||
          (!given.empty() && first <= given.back().last))
        return step.emitError("train-plan-remat: plan='")
               << fixedPlan << "': expected increasing, disjoint ranges of "
               << "units 'a-b' or 'a' below " << n
               << " (the step's units), separated by commas; got '"
               << piece.trim() << "'";
      given.push_back({first, last, true});
    }
    SegmentPlan plan = planWith(fullBatchUnits, given);
    int64_t k = static_cast<int64_t>(step.getMicrobatches());
    Outcome outcome;
    outcome.microbatches = k;
    outcome.units = perMicrobatch(fullBatchUnits, k);
    outcome.tailBytes = fullBatchTail / k;
    FailureOr<int64_t> unplanned = peakOf(
        module, function, index, outcome.units, planWith(outcome.units, {}));
    if (failed(unplanned))
      return failure();
    double copies = 0;
    FailureOr<int64_t> peak = peakOf(module, function, index, outcome.units,
                                     plan, nullptr, nullptr, &copies);
    if (failed(peak))
      return failure();
    if (*peak > memoryBudget)
      return step.emitError("train-plan-remat: plan='")
             << fixedPlan << "' peaks at " << *peak
             << " bytes, over the budget of "
             << static_cast<int64_t>(memoryBudget) << " bytes";
    outcome.unplanned = *unplanned;
    outcome.fits = true;
    outcome.plan = plan;
    outcome.peak = *peak;
    outcome.copies = copies;
    outcome.cost =
        chainOf(outcome.units, outcome.tailBytes).costOf(plan) + copies;
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
    if (reportPlans)
      for (auto [i, unit] : llvm::enumerate(units)) {
        InFlightDiagnostic diag =
            std::next(step.getBody().front().begin(), unit.first)->emitRemark();
        diag << "train-plan-remat: unit " << i << ": ops " << unit.first << ".."
             << unit.last << ", "
             << llvm::formatv("{0:F1}",
                              totalCost ? 100 * unit.cost / totalCost : 0.0)
                    .str()
             << "% of the forward work, keeps " << unit.savedBytes
             << " bytes and a boundary of " << unit.boundaryBytes
             << " bytes, largest value " << unit.largestBytes
             << " bytes, at most " << unit.transientBytes
             << " bytes of its own alive while it runs"
             << (unit.mustSave ? ", marked save" : "")
             << (unit.mustRecompute ? ", marked recompute" : "");
        diag.attachNote(unit.boundary.getLoc()) << "its boundary";
        for (Value value : unit.saved)
          diag.attachNote(value.getLoc())
              << "kept for the backward pass: " << tensorBytes(value.getType())
              << " bytes";
      }
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
    // plan=...: the given segments, measured, instead of a search.
    if (!fixedPlan.empty()) {
      FailureOr<Outcome> given =
          measureGiven(module, index, step, function, units, tail);
      if (failed(given))
        return failure();
      chosen = *given;
      tried.push_back(*given);
      counts.clear();
    }
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
    if (!exportGraph.empty() && failed(writeGraph(step, *chosen, totalCost)))
      return failure();

    auto [checkpoints, count] = checkpointsOf(chosen->plan);
    std::string why;
    if (automatic) {
      llvm::raw_string_ostream os(why);
      os << "microbatches " << chosen->microbatches << " chosen of";
      for (const Outcome &outcome : tried) {
        os << " k=" << outcome.microbatches << ": ";
        if (outcome.fits)
          os << percent(outcome.cost - outcome.copies) << "% recomputed, "
             << (outcome.copies > 0
                     ? "copies " + percent(outcome.copies) + "%, "
                     : std::string())
             << "time " << llvm::formatv("{0:E2}", timeOf(outcome)).str()
             << ";";
        else if (outcome.smallest)
          os << "over the budget (at least " << outcome.smallest << " bytes);";
        else
          os << "no plan found within the budget;";
      }
      os << " ";
    }
    Builder builder(step.getContext());
    ga::train::MemoryPlanRecord record;
    record.budget = budget;
    record.peak = chosen->peak;
    record.unplanned = chosen->unplanned;
    record.checkpoints = checkpoints;
    record.units = count;
    record.recomputed = percent(chosen->cost - chosen->copies) + "%";
    record.choice = automatic ? "auto" : "fixed";
    // The copies' delay, in the same unit as the recomputation.
    if (chosen->copies > 0)
      record.copies = percent(chosen->copies) + "%";
    step->setAttr(ga::train::MemoryPlanRecord::attrName(),
                  record.toAttr(builder));
    step.emitRemark() << "train-plan-remat: budget " << budget << " bytes; "
                      << why << units.size()
                      << " units; without new checkpoints " << chosen->unplanned
                      << " bytes; " << checkpoints << " checkpoints over "
                      << count << " units (recomputed "
                      << percent(chosen->cost - chosen->copies)
                      << "% of the forward work"
                      << (chosen->copies > 0
                              ? "; copies to host memory and back that do not "
                                "hide: " +
                                    percent(chosen->copies) + "% of its time"
                              : std::string())
                      << "); planned peak " << chosen->peak
                      << " bytes; solved in "
                      << llvm::formatv("{0:F3}", solveSeconds).str() << " s; "
                      << candidates << " plans compiled and measured in "
                      << llvm::formatv("{0:F1}", compileSeconds).str() << " s";
    return success();
  }
};
} // namespace

std::unique_ptr<Pass>
ga::createTrainPlanRematPass(const TrainPlanRematPassOptions &options,
                             RematCandidatePipeline candidates) {
  auto pass = std::make_unique<TrainPlanRematPass>(options);
  pass->typed = std::move(candidates);
  return pass;
}

std::string ga::checkRematOptions(int64_t memoryBudget,
                                  llvm::StringRef microbatches) {
  if (!microbatches.empty() && microbatches != "auto")
    return ("microbatches must be 'auto' or empty, got '" + microbatches + "'")
        .str();
  if (microbatches == "auto" && memoryBudget <= 0)
    return "microbatches=auto needs memory-budget (the planner chooses the "
           "count that fits it)";
  return "";
}
