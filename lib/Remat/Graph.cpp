//===- Graph.cpp - Optimal checkpointing of a graph by MILP ---------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Remat/Graph.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#ifdef GA_HAVE_CBC
#include "CbcModel.hpp"
#include "CoinPackedMatrix.hpp"
#include "CoinPackedVector.hpp"
#include "OsiClpSolverInterface.hpp"
#endif

using namespace ga::remat;

bool ga::remat::checkGraphPlan(const std::vector<GraphNode> &nodes,
                               int64_t inputBytes, int64_t budget,
                               const GraphPlan &plan, double &cost,
                               std::string &error, StageMemory memory) {
  int64_t n = static_cast<int64_t>(nodes.size());
  cost = 0;
  auto fail = [&](int64_t k, const std::string &what) {
    error = "stage " + std::to_string(k) + " (adjoint of node " +
            std::to_string(n - 1 - k) + "): " + what;
    return false;
  };
  if (static_cast<int64_t>(plan.computed.size()) != n ||
      static_cast<int64_t>(plan.held.size()) != n) {
    error = "the plan has " + std::to_string(plan.computed.size()) +
            " stages, the graph " + std::to_string(n) + " nodes";
    return false;
  }
  std::vector<int64_t> computations(n, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t t = n - 1 - k;
    std::vector<bool> available(n, false);
    for (int64_t j = 0; j < n; ++j) {
      if (plan.held[k][j] && k == 0)
        return fail(k, "output " + std::to_string(j) +
                           " is held before anything ran");
      available[j] = plan.held[k][j];
    }
    for (int64_t i = 0; i < t; ++i) {
      if (!plan.computed[k][i])
        continue;
      for (int64_t p : nodes[i].inputs)
        if (!available[p])
          return fail(k, "node " + std::to_string(i) + " reads output " +
                             std::to_string(p) + ", which is not there");
      available[i] = true;
      cost += nodes[i].cost;
      ++computations[i];
    }
    for (int64_t i = t; i < n; ++i)
      if (plan.computed[k][i])
        return fail(k, "node " + std::to_string(i) +
                           " is computed after the stage's own node");
    for (int64_t p : nodes[t].inputs)
      if (!available[p])
        return fail(k, "the adjoint reads output " + std::to_string(p) +
                           ", which is not there");
    int64_t bytes = inputBytes + nodes[t].stageBytes;
    for (int64_t j = 0; j < n; ++j) {
      bool next = k + 1 < n && plan.held[k + 1][j];
      if (next && !available[j])
        return fail(k, "output " + std::to_string(j) +
                           " is held for the next stage but was neither held "
                           "nor computed");
      if (plan.held[k][j] || next ||
          (memory == StageMemory::Computed && k > 0 && plan.computed[k][j]))
        bytes += nodes[j].bytes;
    }
    if (bytes > budget)
      return fail(k, "holds " + std::to_string(bytes) +
                         " bytes, over the budget of " +
                         std::to_string(budget));
  }
  // The forward pass: while node i runs, the outputs before it that the
  // backward pass finds held are alive.
  for (int64_t i = 0; i < n && n > 1; ++i) {
    int64_t bytes = inputBytes + nodes[i].forwardBytes;
    for (int64_t j = 0; j < i; ++j)
      if (plan.held[1][j])
        bytes += nodes[j].bytes;
    if (bytes > budget) {
      error = "the forward pass holds " + std::to_string(bytes) +
              " bytes while node " + std::to_string(i) +
              " runs, over the budget of " + std::to_string(budget);
      return false;
    }
  }
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < n; ++j)
      if (plan.held[k][j] && nodes[j].mustRecompute)
        return fail(k, "output " + std::to_string(j) +
                           " must be recomputed but is held");
  for (int64_t i = 0; i < n; ++i)
    if (nodes[i].mustSave && computations[i] > 1) {
      // Over the whole plan, not one stage.
      error = "node " + std::to_string(i) + " must be saved but is computed " +
              std::to_string(computations[i]) + " times";
      return false;
    }
  return true;
}

namespace {
/// Plans with a fixed set of held outputs (see planGraphGreedy).
struct StaticCheckpoints {
  const std::vector<GraphNode> &nodes;
  int64_t n;

  explicit StaticCheckpoints(const std::vector<GraphNode> &nodes)
      : nodes(nodes), n(static_cast<int64_t>(nodes.size())) {}

  /// Stage k holds the checkpoints before its node t = n-1-k (stage 0
  /// none: it computes them) and computes what its adjoint reads and is not
  /// held, with what that reads in turn. Fills `plan` when given.
  double evaluate(const std::vector<bool> &checkpoint,
                  GraphPlan *plan = nullptr) const {
    double cost = 0;
    if (plan) {
      plan->computed.assign(n, std::vector<bool>(n, false));
      plan->held.assign(n, std::vector<bool>(n, false));
    }
    std::vector<bool> computed(n);
    std::vector<int64_t> stack;
    for (int64_t k = 0; k < n; ++k) {
      int64_t t = n - 1 - k;
      std::fill(computed.begin(), computed.end(), false);
      auto held = [&](int64_t j) { return k > 0 && j < t && checkpoint[j]; };
      auto need = [&](int64_t j) {
        if (!held(j) && !computed[j]) {
          computed[j] = true;
          stack.push_back(j);
        }
      };
      for (int64_t p : nodes[t].inputs)
        need(p);
      // Stage 0 computes the checkpoints that the next stages hold.
      if (k == 0)
        for (int64_t j = 0; j + 2 < n; ++j)
          if (checkpoint[j])
            need(j);
      while (!stack.empty()) {
        int64_t i = stack.back();
        stack.pop_back();
        cost += nodes[i].cost;
        for (int64_t p : nodes[i].inputs)
          need(p);
      }
      if (plan)
        for (int64_t j = 0; j < n; ++j) {
          plan->computed[k][j] = computed[j];
          plan->held[k][j] = held(j);
        }
    }
    return cost;
  }

  /// What the checkpoints hold at the fullest stage (0 and 1: every
  /// checkpoint before the last two nodes).
  int64_t bytesOf(const std::vector<bool> &checkpoint) const {
    int64_t bytes = 0;
    for (int64_t j = 0; j + 2 < n; ++j)
      if (checkpoint[j])
        bytes += nodes[j].bytes;
    return bytes;
  }
};
} // namespace

GraphPlan ga::remat::planGraphGreedy(const std::vector<GraphNode> &nodes,
                                     int64_t inputBytes, int64_t budget) {
  auto start = std::chrono::steady_clock::now();
  GraphPlan plan;
  StaticCheckpoints model(nodes);
  int64_t n = model.n;
  std::vector<bool> checkpoint(n, false);
  for (int64_t j = 0; j + 2 < n; ++j)
    checkpoint[j] = nodes[j].mustSave;
  // Every stage keeps room for the largest stage bytes.
  int64_t stage = 0;
  for (const GraphNode &node : nodes)
    stage = std::max({stage, node.stageBytes, node.forwardBytes});
  int64_t room = budget - inputBytes - stage - model.bytesOf(checkpoint);
  if (room < 0) {
    plan.status = GraphPlan::Infeasible;
    plan.message =
        budget < inputBytes + stage
            ? "the budget is below the graph input's " +
                  std::to_string(inputBytes) + " bytes and the largest " +
                  "stage's " + std::to_string(stage)
            : "the outputs marked \"must_save\" and the input hold " +
                  std::to_string(budget - room - stage) +
                  " bytes, over the budget";
    return plan;
  }
  // Lazy greedy: a candidate's gain is re-evaluated when it comes first;
  // it is taken when it still beats the next one's last known gain.
  double cost = model.evaluate(checkpoint);
  using Entry = std::pair<double, int64_t>; // (gain per byte, node)
  std::vector<Entry> heap;
  auto gainPerByte = [&](int64_t j) {
    checkpoint[j] = true;
    double gain = cost - model.evaluate(checkpoint);
    checkpoint[j] = false;
    return gain / static_cast<double>(nodes[j].bytes + 1);
  };
  for (int64_t j = 0; j + 2 < n; ++j)
    if (!checkpoint[j] && !nodes[j].mustRecompute && nodes[j].bytes <= room)
      heap.push_back({gainPerByte(j), j});
  std::make_heap(heap.begin(), heap.end());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    int64_t j = heap.back().second;
    heap.pop_back();
    if (nodes[j].bytes > room)
      continue;
    double fresh = gainPerByte(j);
    if (fresh <= 0)
      continue;
    if (!heap.empty() && fresh < heap.front().first) {
      heap.push_back({fresh, j});
      std::push_heap(heap.begin(), heap.end());
      continue;
    }
    checkpoint[j] = true;
    room -= nodes[j].bytes;
    cost = model.evaluate(checkpoint);
  }
  plan.cost = model.evaluate(checkpoint, &plan);
  plan.status = GraphPlan::Heuristic;
  plan.bound = 0;
  double checked;
  std::string error;
  if (!checkGraphPlan(nodes, inputBytes, budget, plan, checked, error)) {
    std::fprintf(stderr,
                 "ga::remat::planGraphGreedy: the plan fails its check: %s\n",
                 error.c_str());
    std::abort();
  }
  plan.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return plan;
}

GraphPlan ga::remat::planGraphCheckpoints(const std::vector<GraphNode> &nodes,
                                          int64_t inputBytes, int64_t budget,
                                          const std::vector<bool> &checkpoint,
                                          StageMemory memory) {
  GraphPlan plan;
  if (checkpoint.size() != nodes.size()) {
    plan.status = GraphPlan::Infeasible;
    plan.message = "the checkpoint set has " +
                   std::to_string(checkpoint.size()) + " entries, the graph " +
                   std::to_string(nodes.size()) + " nodes";
    return plan;
  }
  // Stage 0 computes everything; a later stage computes what its adjoint
  // reads from what is held, and every output is held while a node not yet
  // reversed reads it (a checkpoint from stage 1 on, a recomputed output
  // from the stage that recomputed it): each is recomputed at most once
  // per run of stages that read it, as a checkpointed segment is.
  int64_t n = static_cast<int64_t>(nodes.size());
  plan.computed.assign(n, std::vector<bool>(n, false));
  plan.held.assign(n, std::vector<bool>(n, false));
  // firstReader[j]: the smallest node that reads j (reversed last).
  std::vector<int64_t> firstReader(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p : nodes[i].inputs)
      firstReader[p] = std::min(firstReader[p], i);
  std::vector<bool> held(n, false);
  for (int64_t k = 0; k < n; ++k) {
    int64_t t = n - 1 - k;
    std::vector<bool> available(held);
    std::vector<int64_t> stack;
    auto need = [&](int64_t j) {
      if (!available[j]) {
        available[j] = true;
        plan.computed[k][j] = true;
        stack.push_back(j);
      }
    };
    if (k == 0)
      for (int64_t j = 0; j < t; ++j)
        need(j);
    for (int64_t p : nodes[t].inputs)
      need(p);
    while (!stack.empty()) {
      int64_t i = stack.back();
      stack.pop_back();
      plan.cost += nodes[i].cost;
      for (int64_t p : nodes[i].inputs)
        need(p);
    }
    for (int64_t j = 0; j < n; ++j) {
      plan.held[k][j] = held[j];
      // Held for the next stage while a node still to be reversed (smaller
      // than t, not the next stage's own) reads it.
      bool stillRead = firstReader[j] < t && j < t - 1;
      held[j] = stillRead && available[j] && !nodes[j].mustRecompute &&
                (checkpoint[j] || nodes[j].mustSave ||
                 (k > 0 && (plan.computed[k][j] || held[j])));
    }
  }
  double checked;
  if (!checkGraphPlan(nodes, inputBytes, budget, plan, checked, plan.message,
                      memory)) {
    plan.status = GraphPlan::Infeasible;
    return plan;
  }
  plan.cost = checked;
  plan.status = GraphPlan::Heuristic;
  return plan;
}

#ifndef GA_HAVE_CBC

bool ga::remat::haveGraphSolver() { return false; }

GraphPlan ga::remat::solveGraph(const std::vector<GraphNode> &, int64_t,
                                int64_t, double, StageMemory,
                                const GraphPlan *) {
  GraphPlan plan;
  plan.status = GraphPlan::Unavailable;
  plan.message = "ga-opt was built without a MILP solver (install Debian's "
                 "coinor-libcbc-dev and reconfigure)";
  return plan;
}

#else

bool ga::remat::haveGraphSolver() { return true; }

namespace {

/// Checkmate's MILP over a graph of n nodes: columns R[k][i] (node i
/// computed in stage k), S[k][j] (held at the start of stage k) and
/// H[k][j] (held during it), for i, j < t = n-1-k; -1 where a variable
/// does not exist.
struct GraphMilp {
  const std::vector<GraphNode> &nodes;
  int64_t n;
  std::vector<std::vector<int>> R, S, H;
  std::vector<double> lower, upper, objective;
  CoinPackedMatrix matrix{false, 0, 0};
  std::vector<double> rowLower, rowUpper;

  explicit GraphMilp(const std::vector<GraphNode> &nodes)
      : nodes(nodes), n(static_cast<int64_t>(nodes.size())), R(n), S(n), H(n) {
    for (int64_t k = 0; k < n; ++k) {
      int64_t t = n - 1 - k;
      R[k].assign(n, -1);
      S[k].assign(n, -1);
      H[k].assign(n, -1);
      for (int64_t i = 0; i < t; ++i) {
        R[k][i] = column(nodes[i].cost, 1);
        S[k][i] = column(0, k == 0 || nodes[i].mustRecompute ? 0 : 1);
        H[k][i] = column(0, 1);
      }
    }
    matrix.setDimensions(0, static_cast<int>(lower.size()));
  }

  int column(double cost, double up) {
    lower.push_back(0);
    upper.push_back(up);
    objective.push_back(cost);
    return static_cast<int>(lower.size() - 1);
  }

  void row(std::vector<std::pair<int, double>> terms, double lo, double hi) {
    CoinPackedVector vector;
    for (auto [index, value] : terms)
      if (index >= 0)
        vector.insert(index, value);
    matrix.appendRow(vector);
    rowLower.push_back(lo);
    rowUpper.push_back(hi);
  }

  /// The constraints of every stage, of the forward pass, and the marks.
  void constrain(int64_t inputBytes, int64_t budget, StageMemory stageMemory) {
    const double inf = COIN_DBL_MAX;
    for (int64_t k = 0; k < n; ++k) {
      int64_t t = n - 1 - k;
      // A computation reads values held or computed in the stage.
      for (int64_t i = 0; i < t; ++i)
        for (int64_t p : nodes[i].inputs)
          row({{R[k][i], 1}, {R[k][p], -1}, {S[k][p], -1}}, -inf, 0);
      // The adjoint of t reads its inputs.
      for (int64_t p : nodes[t].inputs)
        row({{R[k][p], 1}, {S[k][p], 1}}, 1, inf);
      // What the next stage holds was held or computed in this one.
      if (k + 1 < n)
        for (int64_t j = 0; j < t - 1; ++j)
          row({{S[k + 1][j], 1}, {S[k][j], -1}, {R[k][j], -1}}, -inf, 0);
      // Held during the stage: at its start or for the next one (and, with
      // StageMemory::Computed, what it computes).
      std::vector<std::pair<int, double>> memory;
      for (int64_t j = 0; j < t; ++j) {
        row({{H[k][j], 1}, {S[k][j], -1}}, 0, inf);
        if (k + 1 < n && j < t - 1)
          row({{H[k][j], 1}, {S[k + 1][j], -1}}, 0, inf);
        // Computed in a stage of the backward pass: alive in it too (stage
        // 0 is the forward pass, which frees what it does not keep).
        if (stageMemory == StageMemory::Computed && k > 0)
          row({{H[k][j], 1}, {R[k][j], -1}}, 0, inf);
        memory.push_back({H[k][j], static_cast<double>(nodes[j].bytes)});
      }
      row(memory, -inf,
          static_cast<double>(budget - inputBytes - nodes[t].stageBytes));
    }
    // The forward pass: what stage 0 holds of the outputs before node i is
    // alive while i runs.
    for (int64_t i = 0; i < n; ++i) {
      if (nodes[i].forwardBytes == 0)
        continue;
      std::vector<std::pair<int, double>> alive;
      for (int64_t j = 0; j < i && j < n - 1; ++j)
        alive.push_back({H[0][j], static_cast<double>(nodes[j].bytes)});
      row(alive, -inf,
          static_cast<double>(budget - inputBytes - nodes[i].forwardBytes));
    }
    for (int64_t i = 0; i < n; ++i) {
      if (!nodes[i].mustSave)
        continue;
      std::vector<std::pair<int, double>> uses;
      for (int64_t k = 0; k < n; ++k)
        uses.push_back({R[k][i], 1});
      row(uses, -inf, 1);
    }
  }

  /// The solver's variables for a plan that fits.
  std::vector<double> startOf(const GraphPlan &plan,
                              StageMemory stageMemory) const {
    std::vector<double> start(lower.size(), 0);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j) {
        bool next = k + 1 < n && plan.held[k + 1][j];
        if (R[k][j] >= 0)
          start[R[k][j]] = plan.computed[k][j];
        if (S[k][j] >= 0)
          start[S[k][j]] = plan.held[k][j];
        if (H[k][j] >= 0)
          start[H[k][j]] = plan.held[k][j] || next ||
                           (stageMemory == StageMemory::Computed && k > 0 &&
                            plan.computed[k][j]);
      }
    return start;
  }

  /// The plan of the solver's variables.
  void readPlan(const double *solution, GraphPlan &plan) const {
    plan.computed.assign(n, std::vector<bool>(n, false));
    plan.held.assign(n, std::vector<bool>(n, false));
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < n; ++i) {
        if (R[k][i] >= 0)
          plan.computed[k][i] = solution[R[k][i]] > 0.5;
        if (S[k][i] >= 0)
          plan.held[k][i] = solution[S[k][i]] > 0.5;
      }
  }
};

/// The cheaper of the greedy plan and `given` that fits, if either does:
/// the solver's warm start.
std::optional<GraphPlan> warmStart(const std::vector<GraphNode> &nodes,
                                   int64_t inputBytes, int64_t budget,
                                   StageMemory stageMemory,
                                   const GraphPlan *given) {
  GraphPlan greedy = planGraphGreedy(nodes, inputBytes, budget);
  double greedyCost;
  std::string greedyError;
  bool greedyFits = greedy.status == GraphPlan::Heuristic &&
                    (stageMemory == StageMemory::Held ||
                     checkGraphPlan(nodes, inputBytes, budget, greedy,
                                    greedyCost, greedyError, stageMemory));
  double givenCost;
  std::string givenError;
  if (given && given->status == GraphPlan::Heuristic &&
      checkGraphPlan(nodes, inputBytes, budget, *given, givenCost, givenError,
                     stageMemory) &&
      (!greedyFits || givenCost < greedy.cost)) {
    greedy = *given;
    greedy.cost = givenCost;
    greedyFits = true;
  }
  if (!greedyFits)
    return std::nullopt;
  return greedy;
}

} // namespace

GraphPlan ga::remat::solveGraph(const std::vector<GraphNode> &nodes,
                                int64_t inputBytes, int64_t budget,
                                double seconds, StageMemory stageMemory,
                                const GraphPlan *given) {
  auto start = std::chrono::steady_clock::now();
  GraphPlan plan;
  if (nodes.empty()) {
    plan.status = GraphPlan::Optimal;
    return plan;
  }
  GraphMilp milp(nodes);
  milp.constrain(inputBytes, budget, stageMemory);
  plan.variables = static_cast<int64_t>(milp.lower.size());
  plan.constraints = static_cast<int64_t>(milp.rowLower.size());
  if (budget < inputBytes) {
    plan.status = GraphPlan::Infeasible;
    plan.message = "the budget is below the graph input's " +
                   std::to_string(inputBytes) + " bytes";
    return plan;
  }

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(milp.matrix, milp.lower.data(), milp.upper.data(),
                     milp.objective.data(), milp.rowLower.data(),
                     milp.rowUpper.data());
  for (int i = 0; i < static_cast<int>(milp.lower.size()); ++i)
    solver.setInteger(i);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  // Warm start: the greedy plan (or the given one, if cheaper), so that the
  // search prunes from its cost and returns at least it when the time runs
  // out.
  if (std::optional<GraphPlan> warm =
          warmStart(nodes, inputBytes, budget, stageMemory, given)) {
    std::vector<double> values = milp.startOf(*warm, stageMemory);
    model.setBestSolution(values.data(), static_cast<int>(values.size()),
                          warm->cost, /*check=*/true);
    plan.warmStartCost = warm->cost;
  }
  model.setMaximumSeconds(seconds);
  // Serial: CBC runs any number of threads other than 0, 1 included, in
  // its opportunistic threaded mode, whose branching crashes on some
  // problems (a chain of 44 nodes exported by train-plan-remat).
  model.setNumberThreads(0);
  model.branchAndBound();
  plan.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double *solution = model.bestSolution();
  if (!solution) {
    plan.status = model.isProvenInfeasible() ? GraphPlan::Infeasible
                                             : GraphPlan::TimeLimit;
    plan.message = model.isProvenInfeasible()
                       ? std::string("no plan fits the budget (the marks "
                                     "\"must_save\" and \"must_recompute\" "
                                     "constrain it, the input's bytes hold "
                                     "always") +
                             (stageMemory == StageMemory::Computed
                                  ? "; every output a stage computes counts)"
                                  : ")")
                       : "the time limit ran out before a plan was found";
    return plan;
  }
  plan.status =
      model.isProvenOptimal() ? GraphPlan::Optimal : GraphPlan::Feasible;
  plan.bound = model.getBestPossibleObjValue();
  milp.readPlan(solution, plan);
  std::string error;
  if (!checkGraphPlan(nodes, inputBytes, budget, plan, plan.cost, error,
                      stageMemory)) {
    std::fprintf(stderr,
                 "ga::remat::solveGraph: the solver's plan fails "
                 "its check: %s\n",
                 error.c_str());
    std::abort();
  }
  return plan;
}

#endif
