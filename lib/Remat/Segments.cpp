//===- Segments.cpp - Checkpointed segments of a chain of units -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Remat/Segments.h"

#include <algorithm>
#include <limits>

namespace ga::remat {

int64_t SegmentChain::valuesOf(unsigned first, unsigned last) const {
  int64_t bytes = 0;
  for (unsigned i = first; i <= last; ++i)
    bytes += units[i].savedBytes + units[i].boundaryBytes;
  return bytes;
}

int64_t SegmentChain::kept(unsigned first, unsigned last,
                           bool checkpointed) const {
  // (Measured on a compiled step, a unit may keep less than its boundary:
  // its boundary written in place into a buffer of the unit before it. A
  // checkpointed segment keeps the boundary all the same: that buffer is
  // the segment's, or the model counts it with the unit before.)
  return checkpointed ? units[last].boundaryBytes : valuesOf(first, last);
}

namespace {
/// The bytes of a piece as its units are added in order, for its backward
/// peak: the piece runs (forward, or recomputed when checkpointed), the
/// values of its units before each one alive with that one's temporaries
/// (recomputed, with what the backward pass holds by then, the lift); then
/// its values and the largest of its units' backward additions.
struct PieceBytes {
  int64_t adjoints = 0, values = 0;
  /// The most of the values before a unit and its temporaries.
  int64_t running = std::numeric_limits<int64_t>::min();

  void add(const ChainUnit &unit) {
    adjoints = std::max(adjoints, unit.adjoints());
    running = std::max(running, values + unit.transientBytes);
    values += unit.savedBytes + unit.boundaryBytes;
  }
  /// The peak with `before` bytes kept by the pieces before it (at least
  /// one unit added).
  int64_t peak(int64_t before, int64_t lift) const {
    return before + std::max({int64_t(0), lift + running, values + adjoints});
  }
};
} // namespace

int64_t SegmentChain::backwardPeak(int64_t before, unsigned first,
                                   unsigned last, bool checkpointed) const {
  PieceBytes bytes;
  for (unsigned i = first; i <= last; ++i)
    bytes.add(units[i]);
  return bytes.peak(before, checkpointed ? units[last].liftBytes : 0);
}

int64_t SegmentChain::peakOf(const SegmentPlan &plan) const {
  int64_t before = 0, peak = 0;
  for (const Segment &piece : plan) {
    peak = std::max(peak, backwardPeak(before, piece.first, piece.last,
                                       piece.checkpointed));
    before += kept(piece.first, piece.last, piece.checkpointed);
  }
  return std::max(peak, before + tailBytes);
}

double SegmentChain::costOf(const SegmentPlan &plan) const {
  double cost = 0;
  for (const Segment &piece : plan)
    if (piece.checkpointed)
      for (unsigned i = piece.first; i <= piece.last; ++i)
        cost += units[i].cost;
  return cost;
}

std::optional<SegmentPlan> SegmentChain::cheapestWithin(int64_t limit) const {
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
    std::sort(front.begin(), front.end(), [](const State &a, const State &b) {
      return a.kept < b.kept || (a.kept == b.kept && a.cost < b.cost);
    });
    std::vector<State> pruned;
    for (const State &state : front)
      if (pruned.empty() || state.cost < pruned.back().cost)
        pruned.push_back(state);
    if (pruned.size() > 4096)
      pruned.resize(4096);
    front = std::move(pruned);
    for (size_t s = 0; s < front.size(); ++s) {
      const State state = front[s];
      // A saved unit.
      if (!units[i].mustRecompute &&
          backwardPeak(state.kept, i, i, false) <= limit)
        states[i + 1].push_back({state.kept + kept(i, i, false),
                                 state.cost,
                                 static_cast<int>(s),
                                 i,
                                 {i, i, false}});
      // A checkpointed segment [i, j]: its bytes (backwardPeak's) kept up
      // to date as j grows, linear in the segment's length.
      double cost = state.cost;
      PieceBytes bytes;
      for (unsigned j = i; j < n && !units[j].mustSave; ++j) {
        cost += units[j].cost;
        bytes.add(units[j]);
        // Without the lift (which falls as the segment grows) the peak
        // only grows with j.
        if (bytes.peak(state.kept, 0) > limit)
          break;
        if (bytes.peak(state.kept, units[j].liftBytes) > limit)
          continue;
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
  SegmentPlan plan;
  for (const State *state = best; state->parent >= 0;
       state = &states[state->from][state->parent])
    plan.push_back(state->piece);
  std::reverse(plan.begin(), plan.end());
  return plan;
}

SegmentPlan SegmentChain::smallest() const {
  // Every unit saved fits within its own peak (units marked "recompute"
  // checkpointed alone keep less): the search starts from there.
  SegmentPlan saved;
  for (unsigned i = 0; i < units.size(); ++i)
    saved.push_back({i, i, units[i].mustRecompute});
  int64_t low = 0, high = peakOf(saved);
  std::optional<SegmentPlan> plan = cheapestWithin(high);
  if (!plan)
    return {};
  while (high - low > 1) {
    int64_t mid = low + (high - low) / 2;
    if (std::optional<SegmentPlan> fits = cheapestWithin(mid)) {
      high = mid;
      plan = std::move(fits);
    } else {
      low = mid;
    }
  }
  return *plan;
}

} // namespace ga::remat
