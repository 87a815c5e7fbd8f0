//===- PlanSearch.h - The remat planner's search over plans ----*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The search of train-plan-remat at one micro-batch count: which plans of
// the chain of units to measure, in which order, and which to keep. It
// knows nothing of passes or modules: a plan is measured through a
// callback (the pass compiles it to its buffers and simulates them), each
// plan at most once.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_TRANSFORMS_REMAT_PLANSEARCH_H
#define GA_LIB_TRANSFORMS_REMAT_PLANSEARCH_H

#include "RematUnits.h"
#include "ga/Remat/Segments.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/LogicalResult.h"

#include <functional>
#include <optional>

namespace ga::remat_search {

using ga::remat::Segment;
using ga::remat::SegmentPlan;
using ga::remat_units::Unit;

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
  llvm::SmallVector<Unit> units;
  int64_t tailBytes = 0;
};

/// A plan measured: its exact peak in bytes and its copies' cost.
struct Measurement {
  int64_t peak = 0;
  double copies = 0;
};

/// Measures a plan (compiles it and simulates its buffers).
using MeasureFn =
    std::function<llvm::FailureOr<Measurement>(const SegmentPlan &plan)>;

/// One search: the units at one micro-batch's size, their model, the exact
/// peaks measured so far (each plan measured once), the best plan within
/// the budget.
class PlanSearch {
public:
  PlanSearch(llvm::ArrayRef<Unit> units, int64_t tailBytes,
             int64_t microbatches, int64_t budget, MeasureFn measure);

  /// `plan`'s exact peak, measured once.
  llvm::FailureOr<int64_t> exact(const SegmentPlan &plan);
  /// Keeps `plan` if it fits and is cheaper (or as cheap and smaller).
  void consider(const SegmentPlan &plan, int64_t peak);
  /// Replaces the model with the one of `units` as measured (the model of
  /// the tensors alone is kept for the plans of least memory).
  void calibrate(llvm::ArrayRef<Unit> measuredUnits, int64_t tailBytes);

  /// After the unplanned plan was measured and considered: the model's
  /// plans, then (where none fits and `exhaustive`, or the best pays for
  /// copies) fixed segments.
  llvm::LogicalResult searchPlans(const SegmentPlan &unplannedPlan,
                                  int64_t unplannedPeak, bool exhaustive);

  const Outcome &outcome() const { return result; }
  const ga::remat::SegmentChain &model() const { return chain; }
  llvm::ArrayRef<Unit> units() const { return chainUnits; }
  int64_t budget() const { return limit; }
  /// How many plans were measured.
  size_t measuredCount() const { return measured.size(); }
  /// Seconds spent in the model's solver.
  double solveSeconds() const { return solving; }

private:
  struct Measured {
    SegmentPlan plan;
    int64_t peak;
    double copies;
  };
  const Measured *find(const SegmentPlan &plan) const;
  double copiesOf(const SegmentPlan &plan) const;
  SegmentPlan withForced(SegmentPlan plan) const;
  llvm::FailureOr<bool> searchModelPlans(const ga::remat::SegmentChain &model,
                                         const SegmentPlan &unplannedPlan,
                                         SegmentPlan &least);
  llvm::LogicalResult searchSegments(const SegmentPlan &least);
  /// searchModelPlans' last round, with host offload (see there): plans of
  /// the model's list of `count` that recompute less than the best so far,
  /// measured through `fits`.
  llvm::LogicalResult scanPaidCopies(
      int64_t count,
      llvm::function_ref<const std::optional<SegmentPlan> &(int64_t)> candidate,
      llvm::function_ref<llvm::FailureOr<bool>(int64_t)> fits);
  template <typename Solve> auto timed(Solve &&solve);

  llvm::SmallVector<Unit> chainUnits;
  ga::remat::SegmentChain chain;
  int64_t limit;
  MeasureFn measure;
  /// With measured units, the model built from the tensors alone.
  std::optional<ga::remat::SegmentChain> tensorModel;
  llvm::SmallVector<Measured> measured;
  Outcome result;
  double solving = 0;
};

/// `fullBatchUnits` at `k` micro-batches: their activations' bytes over k.
llvm::SmallVector<Unit> perMicrobatch(llvm::ArrayRef<Unit> fullBatchUnits,
                                      int64_t k);

/// The plan that checkpoints `segments` (disjoint, in any order) and leaves
/// every other unit alone: saved, or checkpointed when marked "recompute".
SegmentPlan planWith(llvm::ArrayRef<Unit> units,
                     llvm::ArrayRef<Segment> segments);

/// The checkpointed segments of `plan` and the units they cover.
std::pair<unsigned, unsigned> checkpointsOf(const SegmentPlan &plan);

/// `plan` as text: its checkpointed segments, "[first-last]" each.
std::string describe(const SegmentPlan &plan);

/// The chain of `outcome`'s units as a ga-remat graph (see the pass's
/// description), its chosen plan marked as the warm start.
llvm::json::Value graphOf(const Outcome &outcome, int64_t budget,
                          double totalCost);

} // namespace ga::remat_search

#endif // GA_LIB_TRANSFORMS_REMAT_PLANSEARCH_H
