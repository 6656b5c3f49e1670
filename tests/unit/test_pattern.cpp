// The point-to-point payload pattern (src/memory/payload_pattern.h) through the host
// memory kind: what the receiver's check must catch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "src/memory/memory.h"
#include "src/memory/payload_pattern.h"

namespace gdr {
namespace {

MemoryOps& host_ops() { return *memory_ops(MemKind::host); }

TEST(Pattern, FilledMessageChecksClean) {
  for (std::size_t n : {0ul, 1ul, 7ul, 8ul, 9ul, 4096ul, 65537ul}) {
    std::vector<unsigned char> b(n + 3);
    // Odd offsets: slots of odd message sizes start anywhere.
    host_ops().fill_pattern(b.data() + 3, n, pattern::seed(1, 2, 3));
    EXPECT_EQ(host_ops().count_wrong_pattern(b.data() + 3, n, pattern::seed(1, 2, 3)), 0u) << n;
  }
}

TEST(Pattern, SeedsDifferPerSenderIterationAndSlot) {
  const std::uint64_t s = pattern::seed(1, 5, 2);
  EXPECT_NE(s, pattern::seed(0, 5, 2));
  EXPECT_NE(s, pattern::seed(1, 6, 2));
  EXPECT_NE(s, pattern::seed(1, 5, 3));
  // A message of another sender, iteration or slot fails nearly every byte.
  std::vector<unsigned char> b(4096);
  host_ops().fill_pattern(b.data(), b.size(), s);
  for (std::uint64_t other : {pattern::seed(0, 5, 2), pattern::seed(1, 6, 2), pattern::seed(1, 5, 3)})
    EXPECT_GT(host_ops().count_wrong_pattern(b.data(), b.size(), other), 4000u);
}

TEST(Pattern, TruncatedOrSpoiledMessageIsCounted) {
  const std::uint64_t old_seed = pattern::seed(1, 4, 0), new_seed = pattern::seed(1, 5, 0);
  std::vector<unsigned char> b(1000);
  host_ops().fill_pattern(b.data(), b.size(), old_seed);
  host_ops().fill_pattern(b.data(), 990, new_seed);  // the last 10 bytes never arrived
  std::uint64_t wrong = host_ops().count_wrong_pattern(b.data(), b.size(), new_seed);
  EXPECT_GE(wrong, 9u);
  EXPECT_LE(wrong, 10u);
  host_ops().fill_pattern(b.data(), b.size(), new_seed);
  b[500] ^= 0x01;
  EXPECT_EQ(host_ops().count_wrong_pattern(b.data(), b.size(), new_seed), 1u);
}

// A window's slots filled and checked at once, as p2p does: two messages
// that landed in each other's slot are counted, every byte of both.
TEST(Pattern, SlotsOfAWindowAreCheckedTogether) {
  const std::size_t n = 1001;
  std::vector<std::uint64_t> seeds;
  for (int s = 0; s < 5; ++s) seeds.push_back(pattern::seed(1, 7, s));
  std::vector<unsigned char> b(n * seeds.size());
  host_ops().fill_patterns(b.data(), n, seeds);
  EXPECT_EQ(host_ops().count_wrong_patterns(b.data(), n, seeds), 0u);
  for (std::size_t s = 0; s < seeds.size(); ++s)
    EXPECT_EQ(host_ops().count_wrong_pattern(b.data() + s * n, n, seeds[s]), 0u) << s;
  std::swap_ranges(b.begin() + n, b.begin() + 2 * n, b.begin() + 3 * n);  // slots 1 and 3 swapped
  EXPECT_GT(host_ops().count_wrong_patterns(b.data(), n, seeds), 2 * n - 20);
}

TEST(Pattern, WordsAndBytesAgree) {
  for (std::uint64_t i = 0; i < 64; ++i)
    EXPECT_EQ(pattern::byte_at(9, i), static_cast<unsigned char>(pattern::word(9, i / 8) >> (8 * (i % 8))));
}

}  // namespace
}  // namespace gdr
