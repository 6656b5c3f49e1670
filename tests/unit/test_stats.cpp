#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "src/stats.h"

using namespace gdr;

TEST(Summarize, Basic) {
  std::vector<double> v{3, 1, 2, 4};
  Summary s = summarize(v);
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.stddev, std::sqrt(5.0 / 3.0), 1e-12);
}

TEST(Summarize, IgnoresNaN) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v{nan, 5, nan, 1, 3};
  Summary s = summarize(v);
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_TRUE(std::isnan(summarize(std::vector<double>{nan}).mean));
}

TEST(SlowestPerIteration, TakesMaxOverRanks) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  // 3 ranks x 2 iterations, row-major; rank 2 sat out.
  std::vector<double> t{1, 5, 4, 2, nan, nan};
  auto s = slowest_per_iteration(t, 3, 2);
  EXPECT_DOUBLE_EQ(s[0], 4);
  EXPECT_DOUBLE_EQ(s[1], 5);
}

TEST(BusBw, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(1), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(8), 1.75);
}
