//===- SegmentsTest.cpp - The segment planner of train-plan-remat ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga/Remat/Segments.h against a model worked by hand and against an
// exhaustive search over every plan of small chains.
//
//===----------------------------------------------------------------------===//

#include "ga/Remat/Segments.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace ga::remat;

namespace {

ChainUnit unit(double cost, int64_t boundary, int64_t saved, int64_t largest) {
  ChainUnit u;
  u.cost = cost;
  u.boundaryBytes = boundary;
  u.savedBytes = saved;
  u.largestBytes = largest;
  return u;
}

// Two units worked by hand (the model in Segments.h's comment): u0 keeps
// 5 + 10 bytes saved, u1 20 + 10; each adjoint needs 2 * 10; the loss 4.
//   all saved:            35, then 15 + 30 + 20 = 65          cost 0
//   u0 checkpointed:      35, then 10 + 30 + 20 = 60          cost 1
//   u1 checkpointed:      35, then 15 + 30 + 20 = 65          cost 2
//   both, one segment:    0 + 45 + 20 = 65                    cost 3
//   both, two segments:   35, then 10 + 30 + 20 = 60          cost 3
TEST(RematSegments, TwoUnitsByHand) {
  SegmentChain chain({unit(1, 10, 5, 10), unit(2, 10, 20, 10)}, 4);
  EXPECT_EQ(chain.peakOf({{0, 0, false}, {1, 1, false}}), 65);
  EXPECT_EQ(chain.peakOf({{0, 0, true}, {1, 1, false}}), 60);
  EXPECT_EQ(chain.peakOf({{0, 0, false}, {1, 1, true}}), 65);
  EXPECT_EQ(chain.peakOf({{0, 1, true}}), 65);
  EXPECT_EQ(chain.peakOf({{0, 0, true}, {1, 1, true}}), 60);
  EXPECT_EQ(chain.costOf({{0, 0, true}, {1, 1, false}}), 1);
  EXPECT_EQ(chain.costOf({{0, 1, true}}), 3);

  std::optional<SegmentPlan> roomy = chain.cheapestWithin(65);
  ASSERT_TRUE(roomy);
  EXPECT_EQ(chain.costOf(*roomy), 0);
  std::optional<SegmentPlan> tight = chain.cheapestWithin(60);
  ASSERT_TRUE(tight);
  EXPECT_EQ(*tight, (SegmentPlan{{0, 0, true}, {1, 1, false}}));
  EXPECT_FALSE(chain.cheapestWithin(59));
  EXPECT_EQ(chain.smallest(), (SegmentPlan{{0, 0, true}, {1, 1, false}}));
}

// A unit's own temporaries while it runs (forward, or recomputed in its
// segment) add to what the pieces before it keep and to the values of the
// units before it in its piece. The two units above, u1 with 80 bytes of
// its own alive while it runs:
//   all saved:            35, then 15 + max(80, 30 + 20) = 95
//   u0 checkpointed:      35, then 10 + 80 = 90                cost 1
//   both, one segment:    max(0 + 0, 15 + 80, 45 + 20) = 95
TEST(RematSegments, TemporariesWhileAUnitRuns) {
  ChainUnit u1 = unit(2, 10, 20, 10);
  u1.transientBytes = 80;
  SegmentChain chain({unit(1, 10, 5, 10), u1}, 4);
  EXPECT_EQ(chain.peakOf({{0, 0, false}, {1, 1, false}}), 95);
  EXPECT_EQ(chain.peakOf({{0, 0, true}, {1, 1, false}}), 90);
  EXPECT_EQ(chain.peakOf({{0, 0, false}, {1, 1, true}}), 95);
  EXPECT_EQ(chain.peakOf({{0, 1, true}}), 95);
  EXPECT_EQ(chain.peakOf({{0, 0, true}, {1, 1, true}}), 90);
  std::optional<SegmentPlan> tight = chain.cheapestWithin(90);
  ASSERT_TRUE(tight);
  EXPECT_EQ(*tight, (SegmentPlan{{0, 0, true}, {1, 1, false}}));
  EXPECT_FALSE(chain.cheapestWithin(89));
}

// A unit's backward pass as measured on a compiled step (adjointBytes)
// replaces twice its largest value. The two units above, u1's backward
// pass holding 70 bytes besides its values (u0's stays 2 * 10):
//   all saved:            35, then 15 + 30 + 70 = 115
//   u0 checkpointed:      35, then 10 + 30 + 70 = 110          cost 1
//   both, one segment:    0 + 45 + 70 = 115
//   both, two segments:   35, then 10 + 30 + 70 = 110          cost 3
// and a measured 0 counts as 0, not as the largest value twice.
TEST(RematSegments, MeasuredBackwardPass) {
  ChainUnit u1 = unit(2, 10, 20, 10);
  u1.adjointBytes = 70;
  SegmentChain chain({unit(1, 10, 5, 10), u1}, 4);
  EXPECT_EQ(chain.peakOf({{0, 0, false}, {1, 1, false}}), 115);
  EXPECT_EQ(chain.peakOf({{0, 0, true}, {1, 1, false}}), 110);
  EXPECT_EQ(chain.peakOf({{0, 1, true}}), 115);
  EXPECT_EQ(chain.peakOf({{0, 0, true}, {1, 1, true}}), 110);
  std::optional<SegmentPlan> tight = chain.cheapestWithin(110);
  ASSERT_TRUE(tight);
  EXPECT_EQ(*tight, (SegmentPlan{{0, 0, true}, {1, 1, false}}));
  EXPECT_FALSE(chain.cheapestWithin(109));

  ChainUnit u0 = unit(1, 10, 5, 10);
  u0.adjointBytes = 0;
  SegmentChain alone({u0}, 0);
  EXPECT_EQ(alone.peakOf({{0, 0, false}}), 15);
}

// The loss's values count after the forward pass.
TEST(RematSegments, TailAfterTheForwardPass) {
  SegmentChain chain({unit(1, 10, 0, 1)}, 100);
  EXPECT_EQ(chain.peakOf({{0, 0, false}}), 110);
  EXPECT_FALSE(chain.cheapestWithin(109));
}

/// Every plan of `units` (saved units and checkpointed segments, as the
/// marks allow).
void allPlans(const std::vector<ChainUnit> &units, unsigned i,
              SegmentPlan &prefix, const std::function<void()> &visit) {
  if (i == units.size()) {
    visit();
    return;
  }
  if (!units[i].mustRecompute) {
    prefix.push_back({i, i, false});
    allPlans(units, i + 1, prefix, visit);
    prefix.pop_back();
  }
  for (unsigned j = i; j < units.size() && !units[j].mustSave; ++j) {
    prefix.push_back({i, j, true});
    allPlans(units, j + 1, prefix, visit);
    prefix.pop_back();
  }
}

// On random chains of up to 7 units (some marked), at every limit between
// the smallest and the largest peak of any plan: cheapestWithin finds a
// plan within the limit of the least cost that exhaustive search finds,
// and nothing below the smallest peak; smallest() reaches it.
TEST(RematSegments, DynamicProgramEqualsExhaustiveSearch) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    unsigned n = 1 + rng() % 7;
    std::vector<ChainUnit> units;
    for (unsigned i = 0; i < n; ++i) {
      ChainUnit u =
          unit(1 + rng() % 9, 1 + rng() % 50, rng() % 80, 1 + rng() % 40);
      unsigned mark = rng() % 8;
      u.mustSave = mark == 0;
      u.mustRecompute = mark == 1;
      units.push_back(u);
    }
    SegmentChain chain(units, rng() % 30);
    std::vector<std::pair<int64_t, double>> plans;
    SegmentPlan prefix;
    allPlans(units, 0, prefix, [&] {
      plans.push_back({chain.peakOf(prefix), chain.costOf(prefix)});
    });
    ASSERT_FALSE(plans.empty());
    int64_t lowest = std::numeric_limits<int64_t>::max(), highest = 0;
    for (auto [peak, cost] : plans) {
      lowest = std::min(lowest, peak);
      highest = std::max(highest, peak);
    }
    for (int64_t limit = lowest - 1; limit <= highest; ++limit) {
      double best = std::numeric_limits<double>::infinity();
      for (auto [peak, cost] : plans)
        if (peak <= limit)
          best = std::min(best, cost);
      std::optional<SegmentPlan> found = chain.cheapestWithin(limit);
      if (std::isinf(best)) {
        EXPECT_FALSE(found) << "trial " << trial << " limit " << limit;
        continue;
      }
      ASSERT_TRUE(found) << "trial " << trial << " limit " << limit;
      EXPECT_LE(chain.peakOf(*found), limit);
      EXPECT_EQ(chain.costOf(*found), best)
          << "trial " << trial << " limit " << limit;
    }
    EXPECT_EQ(chain.peakOf(chain.smallest()), lowest) << "trial " << trial;
  }
}

// Marks hold: a unit marked "save" is never inside a checkpointed segment,
// one marked "recompute" never saved.
TEST(RematSegments, MarksAreKept) {
  std::vector<ChainUnit> units(6, unit(1, 10, 30, 10));
  units[2].mustSave = true;
  units[4].mustRecompute = true;
  SegmentChain chain(units, 0);
  for (int64_t limit : {1000, 200, 150, 120}) {
    std::optional<SegmentPlan> plan = chain.cheapestWithin(limit);
    if (!plan)
      continue;
    for (const Segment &piece : *plan)
      for (unsigned i = piece.first; i <= piece.last; ++i) {
        EXPECT_FALSE(piece.checkpointed && units[i].mustSave);
        EXPECT_FALSE(!piece.checkpointed && units[i].mustRecompute);
      }
  }
}

} // namespace
