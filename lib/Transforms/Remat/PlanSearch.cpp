//===- PlanSearch.cpp - The remat planner's search over plans -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The search at one micro-batch count (see PlanSearch.h). The model of the
// chain (ga/Remat/Segments.h) proposes plans in order of cost; each plan is
// measured exactly through the callback, at most once, and kept if it fits
// the budget and is cheaper than the best so far. First a bisection over
// the model's cheapest plans within a grid of limits, then a window below
// the plan found (the exact peaks along the list are not ordered), then,
// where none fits, fixed segments (Chen et al.'s sqrt(n) among them).
//
//===----------------------------------------------------------------------===//

#include "PlanSearch.h"

#include "llvm/ADT/STLExtras.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>

using namespace llvm;
using namespace ga::remat_search;
using ga::remat::SegmentChain;
using ga::remat_units::chainOf;
using ga::remat_units::segmentsOf;

template <typename Solve> auto PlanSearch::timed(Solve &&solve) {
  auto start = std::chrono::steady_clock::now();
  auto value = solve();
  solving +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return value;
}

PlanSearch::PlanSearch(ArrayRef<Unit> units, int64_t tailBytes,
                       int64_t microbatches, int64_t budget, MeasureFn measure)
    : chainUnits(units), chain(chainOf(units, tailBytes)), limit(budget),
      measure(std::move(measure)) {
  result.microbatches = microbatches;
  result.units.assign(units.begin(), units.end());
  result.tailBytes = tailBytes;
}

const PlanSearch::Measured *PlanSearch::find(const SegmentPlan &plan) const {
  for (const Measured &other : measured)
    if (other.plan == plan)
      return &other;
  return nullptr;
}

double PlanSearch::copiesOf(const SegmentPlan &plan) const {
  const Measured *found = find(plan);
  return found ? found->copies : 0;
}

FailureOr<int64_t> PlanSearch::exact(const SegmentPlan &plan) {
  if (const Measured *found = find(plan))
    return found->peak;
  FailureOr<Measurement> got = measure(plan);
  if (failed(got))
    return failure();
  measured.push_back({plan, got->peak, got->copies});
  return got->peak;
}

void PlanSearch::consider(const SegmentPlan &plan, int64_t peak) {
  if (peak > limit)
    return;
  double copies = copiesOf(plan);
  double cost = chain.costOf(plan) + copies;
  if (!result.fits || cost < result.cost ||
      (cost == result.cost && peak < result.peak)) {
    result.fits = true;
    result.plan.assign(plan.begin(), plan.end());
    result.peak = peak;
    result.cost = cost;
    result.copies = copies;
  }
}

void PlanSearch::calibrate(ArrayRef<Unit> measuredUnits, int64_t tailBytes) {
  tensorModel = chain;
  chainUnits.assign(measuredUnits.begin(), measuredUnits.end());
  chain = chainOf(chainUnits, tailBytes);
  result.units = chainUnits;
  result.tailBytes = tailBytes;
}

SegmentPlan PlanSearch::withForced(SegmentPlan plan) const {
  for (Segment &segment : plan)
    if (!segment.checkpointed && chainUnits[segment.first].mustRecompute)
      segment.checkpointed = true;
  return plan;
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
/// How many plans of the model's list are measured below the one found
/// (and, with host offload, above the best).
static constexpr size_t kWindow = 8;

FailureOr<bool> PlanSearch::searchModelPlans(const SegmentChain &model,
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
    FailureOr<int64_t> peak = exact(*plan);
    if (failed(peak))
      return failure();
    consider(*plan, *peak);
    // A plan that fits only with copies that delay the step is
    // considered, but the bisection looks for the cheapest that fits
    // without them (with host-offload, nearly every plan fits).
    return *peak <= limit && copiesOf(*plan) == 0;
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
  if (failed(scanPaidCopies(kLimits, candidate, fits)))
    return failure();
  return true;
}

LogicalResult PlanSearch::scanPaidCopies(
    int64_t count,
    function_ref<const std::optional<SegmentPlan> &(int64_t)> candidate,
    function_ref<FailureOr<bool>(int64_t)> fits) {
  // With host-offload, a plan that fits only with copies that do not
  // hide may cost more than one that recomputes more: while some plan
  // measured does, up to kWindow more plans of the list that recompute
  // less than the best cost so far, the dearest first (those nearest the
  // best plan need the fewest copies).
  bool paidCopies = llvm::any_of(measured, [&](const Measured &m) {
    return m.copies > 0 && m.peak <= limit &&
           chain.costOf(m.plan) < result.cost;
  });
  if (result.fits && paidCopies) {
    unsigned scanned = 0;
    for (int64_t g = count - 1; g >= 0 && scanned < kWindow; --g) {
      const std::optional<SegmentPlan> &plan = candidate(g);
      if (!plan || find(*plan) || chain.costOf(*plan) >= result.cost)
        continue;
      ++scanned;
      if (failed(fits(g)))
        return failure();
    }
  }
  return success();
}

/// When the model's plans do not fit: the model's plan of least memory,
/// then segments of 1, 2, 3, 4 and about sqrt(n) units (Chen et al.'s
/// choice on a uniform chain), every segment checkpointed; where that
/// fits, the cheapest segments first, as few as fit (a bisection on their
/// number: the peak falls as segments are added). Every plan measured
/// lowers `outcome.smallest`.
LogicalResult PlanSearch::searchSegments(const SegmentPlan &least) {
  ArrayRef<Unit> units = chainUnits;
  auto measure = [&](const SegmentPlan &plan) -> FailureOr<int64_t> {
    FailureOr<int64_t> peak = exact(plan);
    if (succeeded(peak)) {
      result.smallest = std::min(result.smallest, *peak);
      consider(plan, *peak);
    }
    return peak;
  };
  if (!least.empty() && failed(measure(withForced(least))))
    return failure();
  // The smallest plan of the model built from the tensors alone too,
  // where the units were measured: the measured model is exact for the
  // unplanned step, not for every plan, and the smallest plans are where
  // the two part most.
  if (tensorModel) {
    SegmentPlan other = timed([&] { return tensorModel->smallest(); });
    if (!other.empty() && failed(measure(withForced(other))))
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
    FailureOr<int64_t> peak = measure(withForced(all));
    if (failed(peak))
      return failure();
    if (*peak > limit)
      continue;
    SegmentPlan segments;
    for (const Segment &segment : all)
      if (segment.checkpointed)
        segments.push_back(segment);
    llvm::stable_sort(segments, [&](const Segment &a, const Segment &b) {
      return chain.costOf({a}) < chain.costOf({b});
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
      (*fits <= limit ? high : low) = mid;
    }
  }
  return success();
}

/// Where the unplanned plan does not fit without cost: the model's plans
/// (the measured model's, then the tensors' where none fits and the peaks
/// are near), then fixed segments where none fits (when `exhaustive`) or
/// the best plan pays for copies.
LogicalResult PlanSearch::searchPlans(const SegmentPlan &unplannedPlan,
                                      int64_t unplannedPeak, bool exhaustive) {
  Outcome &outcome = result;
  outcome.unplanned = unplannedPeak;
  consider(unplannedPlan, unplannedPeak);
  // Without recomputation, and without copies that delay the step: no
  // plan is cheaper.
  if (outcome.fits && outcome.cost == 0)
    return success();

  SegmentPlan least;
  FailureOr<bool> found = searchModelPlans(chain, unplannedPlan, least);
  if (failed(found))
    return failure();
  // Where none of the measured model's candidates fits (its bytes are
  // the unplanned step's, and a plan's may part from them), the model
  // built from the tensors proposes its own; not where every plan
  // measured so far is more than a quarter over the budget (the
  // micro-batch counts too small for it, which a choice of k tries
  // first): the models part by less.
  int64_t closest = std::numeric_limits<int64_t>::max();
  for (const Measured &other : measured)
    closest = std::min(closest, other.peak);
  if (!*found && !outcome.fits && tensorModel && closest <= limit + limit / 4) {
    SegmentPlan tensorLeast;
    found = searchModelPlans(*tensorModel, unplannedPlan, tensorLeast);
    if (failed(found))
      return failure();
  }
  // Where the best plan pays for copies, the fixed segments are measured
  // too: a plan that fits without copies may lie outside the model's
  // list, whose plans all fit once offloaded.
  bool paysCopies = outcome.fits && outcome.copies > 0;
  if (!paysCopies && (*found || outcome.fits || !exhaustive))
    return success();
  if (!outcome.fits)
    outcome.smallest = unplannedPeak;
  return searchSegments(least);
}

SmallVector<Unit> ga::remat_search::perMicrobatch(ArrayRef<Unit> fullBatchUnits,
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

SegmentPlan ga::remat_search::planWith(ArrayRef<Unit> units,
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

std::pair<unsigned, unsigned>
ga::remat_search::checkpointsOf(const SegmentPlan &plan) {
  unsigned checkpoints = 0, units = 0;
  for (const Segment &segment : plan)
    if (segment.checkpointed) {
      ++checkpoints;
      units += segment.last - segment.first + 1;
    }
  return {checkpoints, units};
}

std::string ga::remat_search::describe(const SegmentPlan &plan) {
  std::string text;
  for (const Segment &segment : plan)
    if (segment.checkpointed)
      text += "[" + std::to_string(segment.first) + "-" +
              std::to_string(segment.last) + "]";
  return text.empty() ? "none" : text;
}

json::Value ga::remat_search::graphOf(const Outcome &outcome, int64_t budget,
                                      double totalCost) {
  int64_t k = outcome.microbatches;
  ArrayRef<Unit> units = outcome.units;
  SegmentChain model = chainOf(units, outcome.tailBytes);
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
  json::Array nodes;
  for (auto [i, unit] : llvm::enumerate(units)) {
    std::string name = "u" + std::to_string(i);
    // The run holds what the unit keeps, its boundary included (held
    // with the run, the boundary would count twice: a saved unit holds
    // the run only, its boundary is recomputed from it for free); the
    // stage of its adjoints, its values and what its backward pass adds,
    // as the chain model counts them.
    int64_t values = std::max<int64_t>(0, unit.savedBytes + unit.boundaryBytes);
    json::Object run{{"name", name + ".run"},
                     {"cost", unit.cost},
                     {"bytes", values},
                     {"stage_bytes", values + unit.adjoints()},
                     {"forward_bytes", unit.transientBytes}};
    if (i)
      run["inputs"] = json::Array{"u" + std::to_string(i - 1)};
    if (unit.mustSave)
      run["must_save"] = true;
    if (unit.mustRecompute)
      run["must_recompute"] = true;
    if (holdsRun[i])
      run["checkpoint"] = true;
    nodes.push_back(std::move(run));
    json::Object boundary{{"name", name},
                          {"cost", 0.0},
                          {"bytes", unit.boundaryBytes},
                          {"inputs", json::Array{name + ".run"}}};
    if (holdsBoundary[i])
      boundary["checkpoint"] = true;
    // The last boundary is reversed first, in the stage where the loss
    // runs: what the loss holds is that stage's.
    if (i + 1 == units.size() && outcome.tailBytes > 0)
      boundary["stage_bytes"] = outcome.tailBytes;
    nodes.push_back(std::move(boundary));
  }
  json::Object root{{"nodes", std::move(nodes)},
                    {"input_bytes", 0},
                    {"budget", budget - offset},
                    {"microbatches", k},
                    {"forward_cost", totalCost},
                    {"planned_cost", outcome.cost - outcome.copies},
                    {"planned_peak", outcome.peak}};
  return json::Value(std::move(root));
}
