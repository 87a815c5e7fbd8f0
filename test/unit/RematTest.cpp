//===- RematTest.cpp - The chain planner against Revolve -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Remat/Chain.h"

#include <gtest/gtest.h>

#include <functional>

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

} // namespace
