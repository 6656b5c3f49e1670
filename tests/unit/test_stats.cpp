#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "src/core/stats.h"

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

// Expected values printed by NumPy 1.24 (repr of np.percentile(x, 99)):
// the C++ must give the same double, not merely a close one.
TEST(Percentile, SameDoubleAsNumpyDefault) {
  std::vector<double> a;
  for (int i = 1; i <= 20; ++i) a.push_back(i);
  EXPECT_EQ(percentile_linear(a, 99), 19.81);
  std::vector<double> x{3e-6, 1.25e-6, 7.5e-6, 2e-6, 9.1e-6, 4.4e-6, 1.1e-6};
  Summary s = summarize(x);
  EXPECT_EQ(s.p99, 9.003999999999999e-06);
  EXPECT_EQ(s.median, 3e-06);
  EXPECT_EQ(percentile_linear(std::vector<double>{5.0}, 99), 5.0);
  EXPECT_EQ(percentile_linear(std::vector<double>{1.0, 2.0}, 99), 1.99);
  EXPECT_TRUE(std::isnan(percentile_linear(std::vector<double>{}, 99)));
}

TEST(BusBw, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(1), 0.0);  // nccl-tests: no link is crossed
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(8), 1.75);
}
