//===- Chain.cpp - Optimal checkpointing of a chain -----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Remat/Chain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

using namespace ga::remat;

namespace {

/// The dynamic program over sub-chains [i, j) with s states.
class ChainSolver {
public:
  ChainSolver(const std::vector<double> &costs, int64_t slots)
      : costs(costs), n(static_cast<int64_t>(costs.size())),
        slots(std::min<int64_t>(slots, std::max<int64_t>(n, 1))) {
    prefix.assign(n + 1, 0);
    for (int64_t i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + costs[i];
    uniform = std::all_of(costs.begin(), costs.end(),
                          [&](double c) { return c == costs.front(); });
    // A uniform chain's table depends on the length only.
    int64_t rows = uniform ? n + 1 : (n + 1) * (n + 1);
    table.assign(rows * (this->slots + 1), -1);
    split.assign(rows * (this->slots + 1), 0);
  }

  double solve(int64_t i, int64_t j, int64_t s) {
    if (j - i <= 1)
      return 0;
    size_t key = index(i, j, s);
    if (table[key] >= 0)
      return table[key];
    double best;
    int64_t bestM = 0;
    if (s == 1) {
      // Advance from i to every k in turn.
      best = 0;
      for (int64_t k = i + 1; k < j; ++k)
        best += work(i, k);
    } else {
      best = std::numeric_limits<double>::infinity();
      for (int64_t m = i + 1; m < j; ++m) {
        double candidate = work(i, m) + solve(m, j, s - 1) + solve(i, m, s);
        if (candidate < best) {
          best = candidate;
          bestM = m;
        }
      }
    }
    table[key] = best;
    split[key] = bestM - i; // relative: a uniform table is shared
    return best;
  }

  /// Appends the schedule reversing [i, j) with s states, the state at i
  /// held.
  void schedule(int64_t i, int64_t j, int64_t s, std::vector<Action> &out) {
    if (j - i == 1) {
      out.push_back({Action::Reverse, i, i + 1});
      return;
    }
    if (s == 1) {
      for (int64_t k = j - 1; k > i; --k) {
        out.push_back({Action::Advance, i, k});
        out.push_back({Action::Reverse, k, k + 1});
      }
      out.push_back({Action::Reverse, i, i + 1});
      return;
    }
    solve(i, j, s);
    int64_t m = i + split[index(i, j, s)];
    out.push_back({Action::Advance, i, m});
    out.push_back({Action::Store, m, m});
    schedule(m, j, s - 1, out);
    out.push_back({Action::Free, m, m});
    schedule(i, m, s, out);
  }

  int64_t slotsUsed() const { return slots; }

private:
  double work(int64_t from, int64_t to) const {
    return prefix[to] - prefix[from];
  }
  size_t index(int64_t i, int64_t j, int64_t s) const {
    int64_t row = uniform ? j - i : i * (n + 1) + j;
    return static_cast<size_t>(row * (slots + 1) + s);
  }

  const std::vector<double> &costs;
  int64_t n;
  int64_t slots;
  bool uniform;
  std::vector<double> prefix;
  std::vector<double> table;
  std::vector<int64_t> split;
};

} // namespace

ChainPlan ga::remat::planChain(const std::vector<double> &costs,
                               int64_t slots) {
  ChainPlan plan;
  if (costs.empty() || slots < 1)
    return plan;
  ChainSolver solver(costs, slots);
  int64_t n = static_cast<int64_t>(costs.size());
  plan.cost = solver.solve(0, n, solver.slotsUsed());
  solver.schedule(0, n, solver.slotsUsed(), plan.actions);
  double replayed;
  std::string error;
  if (!simulateChain(costs, slots, plan.actions, replayed, plan.peakStates,
                     error) ||
      std::abs(replayed - plan.cost) > 1e-9 * std::max(1.0, plan.cost)) {
    std::fprintf(stderr,
                 "ga::remat::planChain: the schedule does not replay to "
                 "its cost (%g vs %g): %s\n",
                 replayed, plan.cost, error.c_str());
    std::abort();
  }
  return plan;
}

int64_t ga::remat::revolveOptimum(int64_t l, int64_t s) {
  // r: the unique integer with C(s+r-1, s) < l <= C(s+r, s).
  auto binomial = [](int64_t a, int64_t b) {
    if (b < 0 || b > a)
      return static_cast<int64_t>(0);
    __int128 value = 1;
    for (int64_t k = 1; k <= b; ++k)
      value = value * (a - b + k) / k;
    return static_cast<int64_t>(
        std::min<__int128>(value, std::numeric_limits<int64_t>::max()));
  };
  int64_t r = 0;
  while (binomial(s + r, s) < l)
    ++r;
  return r * l - binomial(s + r, s + 1);
}

bool ga::remat::simulateChain(const std::vector<double> &costs, int64_t slots,
                              const std::vector<Action> &actions, double &cost,
                              int64_t &peakStates, std::string &error) {
  int64_t n = static_cast<int64_t>(costs.size());
  std::set<int64_t> held = {0};
  int64_t working = 0;  // the state the last action left
  int64_t next = n - 1; // the next step to reverse
  cost = 0;
  peakStates = 1;
  for (size_t a = 0; a < actions.size(); ++a) {
    const Action &action = actions[a];
    auto fail = [&](const std::string &why) {
      error = "action " + std::to_string(a) + ": " + why;
      return false;
    };
    switch (action.kind) {
    case Action::Advance:
      if (action.from != working && !held.count(action.from))
        return fail("advances from state " + std::to_string(action.from) +
                    ", which is not held");
      if (action.to <= action.from || action.to > next)
        return fail("advances past the next step to reverse");
      for (int64_t k = action.from; k < action.to; ++k)
        cost += costs[k];
      working = action.to;
      break;
    case Action::Store:
      if (action.from != working)
        return fail("stores a state it does not have");
      held.insert(action.from);
      peakStates = std::max<int64_t>(peakStates, held.size());
      if (static_cast<int64_t>(held.size()) > slots)
        return fail("holds more than " + std::to_string(slots) + " states");
      break;
    case Action::Free:
      if (!held.erase(action.from))
        return fail("frees a state it does not hold");
      break;
    case Action::Reverse:
      if (action.from != next)
        return fail("reverses step " + std::to_string(action.from) +
                    " before step " + std::to_string(next));
      if (action.from != working && !held.count(action.from))
        return fail("reverses step " + std::to_string(action.from) +
                    " without its state");
      --next;
      working = -1;
      break;
    }
  }
  if (next != -1)
    return (error = "steps 0.." + std::to_string(next) + " not reversed",
            false);
  return true;
}
