//===- Chain.h - Optimal checkpointing of a chain ---------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Reversing a chain of l steps (a forward pass of l units, each reading the
// state the previous one wrote, then its adjoint in reverse order) with at
// most s states held at once, the initial one included, in Griewank and
// Walther's model (Revolve): the adjoint of step i needs the state before
// it; a step is advanced (recomputed) from a held state; the last step of
// each reversal runs fused with its adjoint. The dynamic program
//
//   T(i, j, s) = 0                                  if i = j
//              = sum over k in [i, j) of c(i..k)     if s = 1
//              = min over m in (i, j] of c(i..m-1) + T(m, j, s-1) + T(i, m-1,
//              s)
//
// gives the least forward work with step costs c; with unit costs it is
// Revolve's optimum t(l, s) = r*l - C(s+r, s+1). No MLIR: other compilers
// link it, and `ga-remat` plans chains read from JSON with it.
//
//===----------------------------------------------------------------------===//

#ifndef GA_REMAT_CHAIN_H
#define GA_REMAT_CHAIN_H

#include <cstdint>
#include <string>
#include <vector>

namespace ga::remat {

/// One action of a reversal schedule.
struct Action {
  enum Kind {
    Advance, ///< run the forward steps [from, to) from the state at `from`
    Store,   ///< keep the state at `from` (before step `from`)
    Reverse, ///< run step `from` with its adjoint (its state is held)
    Free,    ///< drop the state at `from`
  } kind;
  int64_t from, to;
};

/// An optimal schedule for a chain.
struct ChainPlan {
  double cost = 0;             ///< forward work beyond the adjoints
  int64_t peakStates = 0;      ///< the most states held at once
  std::vector<Action> actions; ///< in order
};

/// The least forward work to reverse a chain of `costs.size()` steps with
/// at most `slots` states held (`slots` >= 1), and a schedule that reaches
/// it. Steps cost `costs[i]`. The cost of the plan is checked by replaying
/// the schedule (simulateChain); a mismatch is a bug and aborts.
ChainPlan planChain(const std::vector<double> &costs, int64_t slots);

/// Revolve's closed form t(l, s) for unit costs (l >= 1, s >= 1).
int64_t revolveOptimum(int64_t l, int64_t s);

/// Replays `actions` on a chain of `costs.size()` steps: checks that every
/// advance starts from a held state, every reversal happens in reverse order
/// from a held state, and at most `slots` states are held. Returns the
/// forward work and the peak states held; on a violation, `error` says which
/// action and why.
bool simulateChain(const std::vector<double> &costs, int64_t slots,
                   const std::vector<Action> &actions, double &cost,
                   int64_t &peakStates, std::string &error);

} // namespace ga::remat

#endif // GA_REMAT_CHAIN_H
