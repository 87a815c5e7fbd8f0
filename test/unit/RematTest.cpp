//===- RematTest.cpp - The chain planner against Revolve -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Remat/Chain.h"
#include "ga/Remat/Graph.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace ga::remat;

namespace {

std::vector<double> uniformChain(int64_t l) {
  return std::vector<double>(l, 1.0);
}

// Revolve's published values (Griewank and Walther): the closed form.
TEST(RematChain, RevolveClosedFormReferenceValues) {
  EXPECT_EQ(revolveOptimum(10, 1), 45);
  EXPECT_EQ(revolveOptimum(10, 2), 20);
  EXPECT_EQ(revolveOptimum(10, 3), 15);
  EXPECT_EQ(revolveOptimum(10, 4), 14);
  EXPECT_EQ(revolveOptimum(16, 4), 27);
  EXPECT_EQ(revolveOptimum(32, 5), 68);
  EXPECT_EQ(revolveOptimum(100, 10), 222);
  EXPECT_EQ(revolveOptimum(1000, 10), 3636);
}

// The dynamic program reaches Revolve's optimum on every uniform chain of
// up to 60 steps with 1 to 12 states, and its schedule replays to it.
TEST(RematChain, DynamicProgramReachesRevolve) {
  for (int64_t l = 1; l <= 60; ++l)
    for (int64_t s = 1; s <= 12; ++s) {
      ChainPlan plan = planChain(uniformChain(l), s);
      EXPECT_EQ(plan.cost, static_cast<double>(revolveOptimum(l, s)))
          << "l = " << l << ", s = " << s;
      EXPECT_LE(plan.peakStates, s) << "l = " << l << ", s = " << s;
    }
  EXPECT_EQ(planChain(uniformChain(100), 10).cost, 222);
  EXPECT_EQ(planChain(uniformChain(1000), 10).cost, 3636);
}

// Unlimited states: every step advanced once (the last fused with its
// adjoint); one state: l(l-1)/2.
TEST(RematChain, Extremes) {
  EXPECT_EQ(planChain(uniformChain(20), 20).cost, 19);
  EXPECT_EQ(planChain(uniformChain(20), 1000).cost, 19);
  EXPECT_EQ(planChain(uniformChain(20), 1).cost, 190);
}

// Costs: the least work never rises as states are added, and a cheap step
// is the one recomputed. Checked against brute force on small chains.
TEST(RematChain, NonUniformCostsMonotoneAndBruteForce) {
  std::vector<double> costs = {5, 1, 1, 7, 2, 3, 1, 4, 6, 2, 1, 3};
  double last = 1e300;
  for (int64_t s = 1; s <= 12; ++s) {
    double cost = planChain(costs, s).cost;
    EXPECT_LE(cost, last) << "s = " << s;
    last = cost;
  }
  // Brute force T over every split, recursively, for a 6-step chain.
  std::vector<double> small = {3, 1, 4, 1, 5, 9};
  std::function<double(int, int, int)> brute = [&](int i, int j, int s) {
    if (j - i <= 1)
      return 0.0;
    auto work = [&](int a, int b) {
      double w = 0;
      for (int k = a; k < b; ++k)
        w += small[k];
      return w;
    };
    if (s == 1) {
      double w = 0;
      for (int k = i + 1; k < j; ++k)
        w += work(i, k);
      return w;
    }
    double best = 1e300;
    for (int m = i + 1; m < j; ++m)
      best = std::min(best, work(i, m) + brute(m, j, s - 1) + brute(i, m, s));
    return best;
  };
  for (int s = 1; s <= 6; ++s)
    EXPECT_EQ(planChain(small, s).cost, brute(0, 6, s)) << "s = " << s;
}

// The simulator refuses schedules that break the model.
TEST(RematChain, SimulatorRefusesBadSchedules) {
  std::vector<double> costs = uniformChain(3);
  double cost;
  int64_t peak;
  std::string error;
  // Reversing out of order.
  EXPECT_FALSE(
      simulateChain(costs, 2, {{Action::Reverse, 0, 1}}, cost, peak, error));
  EXPECT_NE(error.find("before step 2"), std::string::npos) << error;
  // Too many states.
  EXPECT_FALSE(simulateChain(costs, 1,
                             {{Action::Advance, 0, 1}, {Action::Store, 1, 1}},
                             cost, peak, error));
  EXPECT_NE(error.find("more than 1 states"), std::string::npos) << error;
  // Steps left.
  EXPECT_FALSE(simulateChain(costs, 3,
                             {{Action::Advance, 0, 2}, {Action::Reverse, 2, 3}},
                             cost, peak, error));
  EXPECT_NE(error.find("not reversed"), std::string::npos) << error;
}

// A chain as a graph: node i reads node i-1, every output one byte, the
// input one byte: a budget of s bytes holds s states, as in Revolve.
std::vector<GraphNode> chainGraph(const std::vector<double> &costs) {
  std::vector<GraphNode> nodes(costs.size());
  for (size_t i = 0; i < costs.size(); ++i) {
    nodes[i].cost = costs[i];
    nodes[i].bytes = 1;
    if (i)
      nodes[i].inputs = {static_cast<int64_t>(i - 1)};
  }
  return nodes;
}

// A graph with skip connections (U-Net-like): a chain of 8 whose last
// three nodes also read nodes 2, 1 and 0.
std::vector<GraphNode> unetGraph() {
  std::vector<GraphNode> nodes(8);
  for (int64_t i = 0; i < 8; ++i) {
    nodes[i].cost = 1 + i % 3;
    nodes[i].bytes = 10 + 5 * (i % 2);
    if (i)
      nodes[i].inputs = {i - 1};
  }
  nodes[5].inputs.push_back(2);
  nodes[6].inputs.push_back(1);
  nodes[7].inputs.push_back(0);
  return nodes;
}

// The MILP and the dynamic program agree on chains: uniform ones (Revolve's
// closed form) and ones of random costs.
TEST(RematGraph, MilpEqualsDynamicProgramOnChains) {
  if (!haveGraphSolver())
    GTEST_SKIP() << "built without CBC";
  for (int64_t l = 1; l <= 9; ++l)
    for (int64_t s = 1; s <= 4; ++s) {
      GraphPlan plan = solveGraph(chainGraph(uniformChain(l)), 1, s, 60);
      ASSERT_EQ(plan.status, GraphPlan::Optimal)
          << "l = " << l << ", s = " << s;
      EXPECT_DOUBLE_EQ(plan.cost, static_cast<double>(revolveOptimum(l, s)))
          << "l = " << l << ", s = " << s;
    }
  std::mt19937 random(7);
  std::uniform_int_distribution<int> cost(1, 9);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<double> costs(7);
    for (double &c : costs)
      c = cost(random);
    for (int64_t s = 1; s <= 3; ++s) {
      GraphPlan plan = solveGraph(chainGraph(costs), 1, s, 60);
      ASSERT_EQ(plan.status, GraphPlan::Optimal);
      EXPECT_DOUBLE_EQ(plan.cost, planChain(costs, s).cost)
          << "trial " << trial << ", s = " << s;
    }
  }
}

// On a graph with skip connections (a U-Net-like shape), the cost falls as
// the budget grows, every plan passes the check, and a budget below the
// input plus one output is infeasible.
TEST(RematGraph, MonotoneInTheBudget) {
  if (!haveGraphSolver())
    GTEST_SKIP() << "built without CBC";
  std::vector<GraphNode> nodes = unetGraph();
  double previous = 1e30;
  bool someFeasible = false;
  for (int64_t budget = 10; budget <= 140; budget += 5) {
    GraphPlan plan = solveGraph(nodes, 10, budget, 60);
    if (plan.status == GraphPlan::Infeasible) {
      EXPECT_FALSE(someFeasible)
          << "infeasible at " << budget << " after a feasible budget";
      continue;
    }
    ASSERT_EQ(plan.status, GraphPlan::Optimal) << "budget " << budget;
    someFeasible = true;
    double cost;
    std::string error;
    EXPECT_TRUE(checkGraphPlan(nodes, 10, budget, plan, cost, error)) << error;
    EXPECT_LE(plan.cost, previous) << "budget " << budget;
    previous = plan.cost;
  }
  EXPECT_TRUE(someFeasible);
  // With everything held, each node is computed once: the forward pass
  // without the last node (fused with its adjoint).
  double forward = 0;
  for (int64_t i = 0; i < 7; ++i)
    forward += nodes[i].cost;
  EXPECT_DOUBLE_EQ(previous, forward);
}

// Counting what a stage of the backward pass computes (StageMemory::
// Computed) brackets the held-only form from above: on the U-Net-like graph
// and on chains, at every budget, its optimum costs at least the held-only
// optimum, its plan passes its own replay, the held-only plan fails that
// replay at some budget (the mode bites), and with memory for everything
// both are the forward pass.
TEST(RematGraph, ComputedStageMemoryBracketsHeld) {
  if (!haveGraphSolver())
    GTEST_SKIP() << "built without CBC";
  bool bites = false;
  for (const std::vector<GraphNode> &nodes :
       {unetGraph(), chainGraph(uniformChain(6))}) {
    int64_t input = nodes.size() == 6 ? 1 : 10;
    int64_t step = nodes.size() == 6 ? 1 : 5;
    bool feasible = false;
    for (int64_t budget = input; budget <= 30 * step; budget += step) {
      GraphPlan held = solveGraph(nodes, input, budget, 60);
      GraphPlan computed =
          solveGraph(nodes, input, budget, 60, StageMemory::Computed);
      double cost;
      std::string error;
      if (held.status == GraphPlan::Optimal &&
          !checkGraphPlan(nodes, input, budget, held, cost, error,
                          StageMemory::Computed))
        bites = true;
      if (computed.status == GraphPlan::Infeasible) {
        EXPECT_FALSE(feasible) << "budget " << budget;
        continue;
      }
      ASSERT_EQ(computed.status, GraphPlan::Optimal) << "budget " << budget;
      ASSERT_EQ(held.status, GraphPlan::Optimal) << "budget " << budget;
      feasible = true;
      EXPECT_TRUE(checkGraphPlan(nodes, input, budget, computed, cost, error,
                                 StageMemory::Computed))
          << error;
      EXPECT_GE(computed.cost, held.cost) << "budget " << budget;
    }
    EXPECT_TRUE(feasible);
    GraphPlan all =
        solveGraph(nodes, input, 1000 * step, 60, StageMemory::Computed);
    ASSERT_EQ(all.status, GraphPlan::Optimal);
    EXPECT_DOUBLE_EQ(all.cost, solveGraph(nodes, input, 1000 * step, 60).cost);
  }
  EXPECT_TRUE(bites);
}

// Another planner's held outputs as a plan (planGraphCheckpoints): each
// output recomputed at most once per run of stages that read it. On a
// uniform chain of 6 (nodes 0-5, the last fused with its adjoint), holding
// every output is the forward pass (5); holding none recomputes nodes 0-3
// once more in stage 1 (9) and holds them; holding node 2 recomputes 0-1
// and 3 (8). Each passes the replay in both stage-memory forms with room
// for everything, and the MILP starts from it when it is cheaper than the
// greedy plan.
TEST(RematGraph, CheckpointsAsAPlan) {
  std::vector<GraphNode> nodes = chainGraph(uniformChain(6));
  struct Case {
    std::vector<bool> checkpoint;
    double cost;
  };
  for (const Case &c : {Case{{true, true, true, true, false, false}, 5},
                        Case{std::vector<bool>(6, false), 9},
                        Case{{false, false, true, false, false, false}, 8}}) {
    for (StageMemory memory : {StageMemory::Held, StageMemory::Computed}) {
      GraphPlan plan =
          planGraphCheckpoints(nodes, 1, 100, c.checkpoint, memory);
      ASSERT_EQ(plan.status, GraphPlan::Heuristic) << plan.message;
      EXPECT_DOUBLE_EQ(plan.cost, c.cost);
    }
  }
  // Too little memory to hold every output: refused with the replay's
  // reason.
  GraphPlan tight =
      planGraphCheckpoints(nodes, 1, 3, {true, true, true, true, false, false});
  EXPECT_EQ(tight.status, GraphPlan::Infeasible);
  EXPECT_NE(tight.message.find("over the budget"), std::string::npos)
      << tight.message;
  EXPECT_EQ(planGraphCheckpoints(nodes, 1, 100, {true}).status,
            GraphPlan::Infeasible);
  if (!haveGraphSolver())
    return;
  GraphPlan all = planGraphCheckpoints(nodes, 1, 100,
                                       {true, true, true, true, false, false});
  GraphPlan milp = solveGraph(nodes, 1, 100, 60, StageMemory::Held, &all);
  ASSERT_EQ(milp.status, GraphPlan::Optimal);
  EXPECT_LE(milp.warmStartCost, 5);
  EXPECT_DOUBLE_EQ(milp.cost, 5);
}

// The greedy plan, without a solver: on the U-Net-like graph of
// MonotoneInTheBudget, every plan passes the check and costs at least the
// MILP's optimum, with everything held it is the forward pass (each node
// once); must_save outputs that do not fit are infeasible. The MILP starts
// from it: its plan never costs more.
TEST(RematGraph, GreedyPlansAndWarmStarts) {
  std::vector<GraphNode> nodes = unetGraph();
  double forward = 0;
  for (int64_t i = 0; i < 7; ++i)
    forward += nodes[i].cost;
  for (int64_t budget = 10; budget <= 140; budget += 5) {
    GraphPlan greedy = planGraphGreedy(nodes, 10, budget);
    ASSERT_EQ(greedy.status, GraphPlan::Heuristic) << "budget " << budget;
    double cost;
    std::string error;
    EXPECT_TRUE(checkGraphPlan(nodes, 10, budget, greedy, cost, error))
        << error;
    EXPECT_DOUBLE_EQ(cost, greedy.cost);
    EXPECT_GE(greedy.cost, forward);
    if (!haveGraphSolver())
      continue;
    GraphPlan milp = solveGraph(nodes, 10, budget, 60);
    if (milp.status == GraphPlan::Infeasible)
      continue;
    ASSERT_EQ(milp.status, GraphPlan::Optimal) << "budget " << budget;
    EXPECT_DOUBLE_EQ(milp.warmStartCost, greedy.cost) << "budget " << budget;
    EXPECT_LE(milp.cost, greedy.cost) << "budget " << budget;
  }
  EXPECT_DOUBLE_EQ(planGraphGreedy(nodes, 10, 1000).cost, forward);
  EXPECT_EQ(planGraphGreedy(nodes, 10, 9).status, GraphPlan::Infeasible);
  nodes[1].mustSave = nodes[3].mustSave = true;
  GraphPlan marked = planGraphGreedy(nodes, 10, 39);
  EXPECT_EQ(marked.status, GraphPlan::Infeasible);
  EXPECT_NE(marked.message.find("must_save"), std::string::npos)
      << marked.message;
  marked = planGraphGreedy(nodes, 10, 40);
  ASSERT_EQ(marked.status, GraphPlan::Heuristic);
  // Each marked node computed once over the whole plan.
  for (int64_t i : {1, 3}) {
    int64_t times = 0;
    for (const std::vector<bool> &stage : marked.computed)
      times += stage[i];
    EXPECT_EQ(times, 1) << "node " << i;
  }
}

// A graph too large for the MILP: the greedy plan of a long chain with
// skip connections passes its check, and more memory never costs more.
TEST(RematGraph, GreedyOnLargeGraphs) {
  const int64_t n = 300;
  std::vector<GraphNode> nodes(n);
  for (int64_t i = 0; i < n; ++i) {
    nodes[i].cost = 1 + i % 3;
    nodes[i].bytes = 100 + 50 * (i % 2);
    if (i)
      nodes[i].inputs = {i - 1};
    if (i > n / 2 && n - 1 - i < i - 1)
      nodes[i].inputs.push_back(n - 1 - i);
  }
  double previous = 1e300;
  for (int64_t budget : {1000, 3000, 10000, 50000}) {
    GraphPlan plan = planGraphGreedy(nodes, 100, budget);
    ASSERT_EQ(plan.status, GraphPlan::Heuristic);
    double cost;
    std::string error;
    EXPECT_TRUE(checkGraphPlan(nodes, 100, budget, plan, cost, error)) << error;
    EXPECT_LE(plan.cost, previous) << "budget " << budget;
    previous = plan.cost;
  }
}

// The check refuses plans that break the model.
TEST(RematGraph, CheckRefusesBadPlans) {
  std::vector<GraphNode> nodes = chainGraph(uniformChain(3));
  GraphPlan plan;
  plan.computed.assign(3, std::vector<bool>(3, false));
  plan.held.assign(3, std::vector<bool>(3, false));
  double cost;
  std::string error;
  // Stage 0 reverses node 2, which reads node 1: nothing computed it.
  EXPECT_FALSE(checkGraphPlan(nodes, 1, 10, plan, cost, error));
  EXPECT_NE(error.find("the adjoint reads output 1"), std::string::npos)
      << error;
  // Node 1 computed without node 0.
  plan.computed[0][1] = true;
  EXPECT_FALSE(checkGraphPlan(nodes, 1, 10, plan, cost, error));
  EXPECT_NE(error.find("node 1 reads output 0"), std::string::npos) << error;
  // A correct plan, then over a budget of one state.
  plan.computed[0][0] = true;
  plan.held[1][0] = plan.held[1][1] = true;
  EXPECT_TRUE(checkGraphPlan(nodes, 1, 10, plan, cost, error)) << error;
  EXPECT_DOUBLE_EQ(cost, 2);
  EXPECT_FALSE(checkGraphPlan(nodes, 1, 2, plan, cost, error));
  EXPECT_NE(error.find("over the budget"), std::string::npos) << error;
}

} // namespace
