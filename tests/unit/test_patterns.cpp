// The concurrent patterns' schedules (collectives/patterns.h): rounds are
// perfect matchings covering every pair once per direction in O(n) steps.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "collectives/patterns.h"

namespace gdr::patterns {
namespace {

// The schedules take the test's directions, from its registered traits.
int dirs(std::string_view test) { return find_test(test)->traits.directions; }

TEST(Patterns, RoundsCoverEveryOrderedPairOnceWithEveryRankBusy) {
  for (int n = 2; n <= 33; ++n)
    for (const char* test : {"latency", "bw", "bibw"}) {
      std::map<Flow, int> seen;
      const int k = steps("rounds", dirs(test), n);
      EXPECT_EQ(k, (std::string(test) == "bibw" ? 1 : 2) * (n % 2 ? n : n - 1)) << n << test;
      for (int s = 0; s < k; ++s) {
        std::map<int, int> busy;  // flows per rank in this step
        for (auto [a, b] : flows("rounds", dirs(test), n, s)) {
          ASSERT_NE(a, b);
          ASSERT_TRUE(a >= 0 && a < n && b >= 0 && b < n);
          seen[{a, b}]++;
          busy[a]++;
          if (std::string(test) != "bibw") busy[b]++;
        }
        // A perfect matching: every rank in exactly one pair (one rests for odd n).
        EXPECT_EQ(static_cast<int>(busy.size()), n % 2 ? n - 1 : n) << n << test << s;
        for (auto [r, c] : busy) EXPECT_EQ(c, 1) << n << r;
      }
      EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1)) << n << test;
      for (auto [f, c] : seen) EXPECT_EQ(c, 1) << n << test << f.first << ">" << f.second;
    }
}

TEST(Patterns, IncastFanoutNeighbor) {
  const int n = 5;
  ASSERT_EQ(steps("incast", dirs("bw"), n), n);
  for (int r = 0; r < n; ++r) {
    auto in = flows("incast", dirs("bw"), n, r), out = flows("fanout", dirs("bw"), n, r);
    ASSERT_EQ(in.size(), 4u);
    for (auto [a, b] : in) EXPECT_TRUE(b == r && a != r);
    for (auto [a, b] : out) EXPECT_TRUE(a == r && b != r);
  }
  EXPECT_EQ(max_in("incast", dirs("bw"), n, 2), n - 1);
  EXPECT_EQ(max_out("incast", dirs("bw"), n, 2), 1);
  auto ring = flows("neighbor", dirs("bw"), n, 0);
  ASSERT_EQ(ring.size(), 5u);
  for (auto [a, b] : ring) EXPECT_EQ(b, (a + 1) % n);
  EXPECT_EQ(flows("neighbor", dirs("latency"), 2, 0).size(), 1u);  // never a pair both ways in a ping-pong
  EXPECT_EQ(flows("neighbor", dirs("bibw"), 2, 0).size(), 2u);
  EXPECT_EQ(peers("neighbor", dirs("bw"), n, 0), (std::vector<int>{1, 4}));  // lazy: only the ring's two
  EXPECT_EQ(peers("rounds", dirs("bw"), n, 0), (std::vector<int>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace gdr::patterns
