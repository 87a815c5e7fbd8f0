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

#include "PlanSearch.h"
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
using namespace ga::remat_search;
using ga::remat::Segment;
using ga::remat::SegmentPlan;

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
  /// Where set, the next plan measured is traced into it (measure-units).
  UnitTrace *traceNext = nullptr;

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
    // The compiled step's arguments: a rank's shards of the optimizer's
    // state where train-shard-state made them.
    SmallVector<Type> arguments = argumentTypes(compiled, function);
    if (deviceAllocator) {
      SmallVector<int64_t> inputs;
      for (Type type : arguments)
        inputs.push_back(tensorBytes(type));
      return ga::cachingAllocatorBytes(*profile, inputs) + deviceFixedBytes;
    }
    return profile->peakBytes + argumentBytes(arguments);
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
    bool automatic = chooseMicrobatches;
    if (std::string error =
            ga::checkRematOptions(memoryBudget, chooseMicrobatches);
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

  /// Writes the chain of units at `outcome`'s micro-batch count to
  /// `exportGraph` as a ga-remat graph (see the pass's description).
  LogicalResult writeGraph(ga::train::StepOp step, const Outcome &outcome,
                           double totalCost) {
    std::error_code error;
    llvm::raw_fd_ostream os(exportGraph, error);
    if (error)
      return step.emitError("train-plan-remat: cannot write export-graph '")
             << exportGraph << "': " << error.message();
    os << llvm::formatv("{0:2}", graphOf(outcome, memoryBudget, totalCost))
       << "\n";
    return success();
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

  /// Compiles `plan` of the `index`-th step in `module` (`function`) and
  /// measures it: the search's callback. With report-plans, a remark per
  /// plan; `traceNext`, when set, follows the simulation.
  FailureOr<Measurement> measurePlan(const PlanSearch &search, ModuleOp module,
                                     func::FuncOp function, unsigned index,
                                     const SegmentPlan &plan) {
    std::string where;
    double copies = 0;
    FailureOr<int64_t> peak =
        peakOf(module, function, index, search.units(), plan,
               reportPlans ? &where : nullptr, traceNext, &copies);
    if (failed(peak))
      return failure();
    if (reportPlans) {
      auto [checkpoints, units] = checkpointsOf(plan);
      double total = totalCostOf(search.units());
      auto percent = [&](double cost) {
        return llvm::formatv("{0:F1}", total ? 100 * cost / total : 0.0).str();
      };
      function.emitRemark()
          << "train-plan-remat: plan " << search.measuredCount() + 1 << " at "
          << search.outcome().microbatches
          << " micro-batch(es): " << checkpoints << " checkpoints over "
          << units << " units, recomputed "
          << percent(search.model().costOf(plan)) << "%"
          << (copies > 0 ? ", copies " + percent(copies) + "%" : std::string())
          << ", pieces " << describe(plan) << ", model peak "
          << search.model().peakOf(plan) << " bytes, exact "
          << "peak " << *peak << " bytes, "
          << (*peak <= search.budget() ? "fits" : "over the budget")
          << (where.empty() ? "" : "; the peak " + where);
    }
    return Measurement{*peak, copies};
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
    PlanSearch *self = nullptr;
    PlanSearch search(
        units, fullBatchTail / k, k, static_cast<int64_t>(memoryBudget),
        [&](const SegmentPlan &plan) {
          return measurePlan(*self, module, function, index, plan);
        });
    self = &search;

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
      unplanned = search.exact(unplannedPlan);
    } else {
      traceNext = measureUnits ? &trace : nullptr;
      unplanned = search.exact(unplannedPlan);
      traceNext = nullptr;
    }
    if (failed(unplanned))
      return failure();
    if (measureUnits) {
      int64_t modelled = search.model().peakOf(unplannedPlan);
      int64_t tail = fullBatchTail / k;
      SmallVector<Unit> measured(units);
      bool calibrated = trace.calibrate(measured, tail);
      if (calibrated)
        search.calibrate(measured, tail);
      if (reportPlans)
        reportUnits(function, k, calibrated, units, search, trace,
                    unplannedPlan, modelled, tail, *unplanned);
    }
    LogicalResult searched =
        search.searchPlans(unplannedPlan, *unplanned, exhaustive);
    solveSeconds += search.solveSeconds();
    if (failed(searched))
      return failure();
    return search.outcome();
  }

  /// report-plans: the units as measured on the step without new
  /// checkpoints, against the model of their tensors.
  void reportUnits(func::FuncOp function, int64_t k, bool calibrated,
                   ArrayRef<Unit> units, PlanSearch &search,
                   const UnitTrace &trace, const SegmentPlan &unplannedPlan,
                   int64_t modelled, int64_t tail, int64_t unplanned) {
    InFlightDiagnostic remark = function.emitRemark();
    remark << "train-plan-remat: at " << k << " micro-batch(es), ";
    if (!calibrated) {
      remark << "the units were not measured (the compiled step does "
             << "not show them); the model's unplanned peak is " << modelled
             << " bytes";
      return;
    }
    int64_t modelledKept = 0, keptBytes = 0;
    for (auto [unit, bytes] : llvm::zip(units, trace.keptBytes())) {
      modelledKept += unit.savedBytes + unit.boundaryBytes;
      keptBytes += bytes;
    }
    remark << "the units measured on the step without new "
           << "checkpoints keep " << keptBytes << " bytes (modelled "
           << modelledKept << "), the loss holds " << tail
           << " bytes more; the model's unplanned peak is "
           << search.model().peakOf(unplannedPlan) << " bytes (was " << modelled
           << "), the exact one " << unplanned;
    for (auto [i, unit] : llvm::enumerate(search.units()))
      remark.attachNote(unit.boundary.getLoc())
          << "unit " << i << " measured: keeps "
          << unit.savedBytes + unit.boundaryBytes << " bytes, "
          << unit.transientBytes << " while it runs, " << unit.adjoints()
          << " more in its backward pass, " << unit.liftBytes
          << " more alive when it is reached";
  }

  /// `plan=...` (unit ranges "a-b" or "a", increasing, disjoint, by
  /// commas): that plan at the step's micro-batch count, measured; an
  /// error where it does not parse or does not fit the budget.
  FailureOr<Outcome> measureGiven(ModuleOp module, unsigned index,
                                  ga::train::StepOp step, func::FuncOp function,
                                  ArrayRef<Unit> fullBatchUnits,
                                  int64_t fullBatchTail) {
    if (chooseMicrobatches)
      return step.emitError("train-plan-remat: plan='")
             << fixedPlan << "' applies a plan at the step's micro-batch "
             << "count; it cannot be given with choose-microbatches=true";
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

  /// report-plans: a remark per unit found (its operations, its share of
  /// the work, what it keeps), with notes at its boundary and its values.
  void reportUnitsFound(ga::train::StepOp step, ArrayRef<Unit> units,
                        double totalCost) {
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
  }

  /// The chosen plan recorded on the step (train.memory_plan) and
  /// reported in a remark: the budget, the counts tried (when choosing),
  /// the checkpoints, the recomputation, the peak and the search's times.
  void recordChoice(ga::train::StepOp step, const Outcome &choice,
                    ArrayRef<Outcome> tried, bool automatic, size_t numUnits,
                    double totalCost,
                    llvm::function_ref<double(const Outcome &)> timeOf) {
    const Outcome *chosen = &choice;
    int64_t budget = memoryBudget;
    auto percent = [&](double cost) {
      return llvm::formatv("{0:F1}", totalCost ? 100 * cost / totalCost : 0.0)
          .str();
    };
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
                      << why << numUnits << " units; without new checkpoints "
                      << chosen->unplanned << " bytes; " << checkpoints
                      << " checkpoints over " << count << " units (recomputed "
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
  }

  /// The micro-batch counts to try: the step's, or every divisor of the
  /// batch per rank (`perRank`, in increasing order) when choosing.
  static FailureOr<SmallVector<int64_t>>
  countsToTry(ga::train::StepOp step, bool automatic, int64_t &perRank) {
    if (!automatic)
      return SmallVector<int64_t>{static_cast<int64_t>(step.getMicrobatches())};
    std::optional<int64_t> batch;
    for (Value operand : step.getBatch())
      if (auto tensor = dyn_cast<RankedTensorType>(operand.getType());
          tensor && tensor.getRank() >= 1 && !tensor.isDynamicDim(0))
        batch = tensor.getDimSize(0);
    if (!batch)
      return step.emitError("train-plan-remat: choose-microbatches=true needs "
                            "a static batch dimension");
    perRank = *batch / static_cast<int64_t>(step.getDataParallel());
    SmallVector<int64_t> counts;
    for (int64_t k = 1; k <= perRank; ++k)
      if (perRank % k == 0)
        counts.push_back(k);
    return counts;
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
    auto start = std::chrono::steady_clock::now();
    units = findUnits(step);
    tail = tailBytesOf(step, units);
    solveSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double totalCost = totalCostOf(units);
    if (reportPlans)
      reportUnitsFound(step, units, totalCost);

    int64_t perRank = 0;
    FailureOr<SmallVector<int64_t>> tryCounts =
        countsToTry(step, automatic, perRank);
    if (failed(tryCounts))
      return failure();
    SmallVector<int64_t> counts = std::move(*tryCounts);
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

    recordChoice(step, *chosen, tried, automatic, units.size(), totalCost,
                 timeOf);
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
                                  bool chooseMicrobatches) {
  if (chooseMicrobatches && memoryBudget <= 0)
    return "choose-microbatches=true needs memory-budget (the planner "
           "chooses the count that fits it)";
  return "";
}
