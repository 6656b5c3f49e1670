// The ring's layout, including awkward counts: count < ranks, counts not
// divisible by ranks, one element. Simulates the whole ring with sets of
// contributions to prove every rank ends with every contribution.
#include <gtest/gtest.h>

#include <set>

#include "collectives/ring_schedule.h"

using namespace gdr::ring;

TEST(Segments, CoverExactlyOnce) {
  for (std::size_t count : {0ul, 1ul, 2ul, 3ul, 7ul, 100ul, 1031ul})
    for (int n : {1, 2, 3, 4, 5, 8}) {
      std::size_t next = 0;
      for (int i = 0; i < n; ++i) {
        Range s = segment(count, n, i);
        EXPECT_EQ(s.offset, next);
        next += s.count;
      }
      EXPECT_EQ(next, count) << "count " << count << " n " << n;
    }
}

TEST(Segments, NearEqual) {
  Range a = segment(10, 4, 0), d = segment(10, 4, 3);
  EXPECT_EQ(a.count, 3u);
  EXPECT_EQ(d.count, 2u);
  EXPECT_EQ(segment(1, 4, 0).count, 1u);
  EXPECT_EQ(segment(1, 4, 1).count, 0u);
}

TEST(Chunks, CoverSegmentAndRespectLimit) {
  Range seg{100, 1000};
  std::size_t k = chunks_per_segment(4000, 4, 300);
  EXPECT_EQ(k, 4u);
  std::size_t next = seg.offset;
  for (std::size_t c = 0; c < k; ++c) {
    Range ch = chunk(seg, k, c);
    EXPECT_EQ(ch.offset, next);
    EXPECT_LE(ch.count, 300u);
    next += ch.count;
  }
  EXPECT_EQ(next, seg.offset + seg.count);
  EXPECT_EQ(chunks_per_segment(1, 4, 1000), 1u);
  EXPECT_EQ(chunks_per_segment(10, 2, 0), 5u);  // 0 treated as 1 element
}

// Every rank's segment s holds a set of contributing ranks; run the schedule
// and check that what each rank sends is exactly what its right neighbour
// expects to receive, and that all ranks end with all contributions.
TEST(Schedule, RingSimulationGivesFullSums) {
  for (int n : {2, 3, 4, 5, 7}) {
    std::vector<std::vector<std::set<int>>> have(n, std::vector<std::set<int>>(n));
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < n; ++s) have[r][s] = {r};
    for (int g = 0; g < steps(n); ++g) {
      auto before = have;
      for (int r = 0; r < n; ++r) {
        int left = (r + n - 1) % n;
        int seg = recv_segment(r, n, g);
        ASSERT_EQ(send_segment(left, n, g), seg) << "n " << n << " step " << g;
        const auto& incoming = before[left][seg];
        if (is_reduce_step(g, n)) have[r][seg].insert(incoming.begin(), incoming.end());
        else have[r][seg] = incoming;
      }
    }
    std::set<int> all;
    for (int r = 0; r < n; ++r) all.insert(r);
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < n; ++s) EXPECT_EQ(have[r][s], all) << "n " << n << " r " << r << " s " << s;
  }
}

TEST(Schedule, AfterReduceScatterRankOwnsNextSegment) {
  int n = 4;
  for (int r = 0; r < n; ++r) EXPECT_EQ(recv_segment(r, n, n - 2), (r + 1) % n);
  EXPECT_EQ(steps(1), 0);
  EXPECT_EQ(steps(4), 6);
}
