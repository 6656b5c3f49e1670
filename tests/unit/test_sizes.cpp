#include <gtest/gtest.h>

#include "src/core/errors.h"
#include "src/core/sizes.h"

using namespace gdr;

TEST(ParseSize, PlainAndSuffixes) {
  EXPECT_EQ(parse_size("8", "-b"), 8u);
  EXPECT_EQ(parse_size("1K", "-b"), 1024u);
  EXPECT_EQ(parse_size("64k", "-b"), 64u * 1024);
  EXPECT_EQ(parse_size("64M", "-b"), 64u << 20);
  EXPECT_EQ(parse_size("2G", "-b"), 2ull << 30);
  EXPECT_EQ(parse_size("16B", "-b"), 16u);
}

TEST(ParseSize, RejectsBadText) {
  for (const char* bad : {"", "0", "-8", "abc", "8X", "1.5M", "K", "99999999999999999999",
                          "20000000000G", " 8"})
    EXPECT_THROW(parse_size(bad, "--minbytes"), UsageError) << bad;
}

TEST(ParseSize, MessageNamesOptionAndValue) {
  try {
    parse_size("12Q", "--maxbytes");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--maxbytes '12Q'"), std::string::npos) << e.what();
  }
}

TEST(SizeSweep, FactorTwoIncludesBothEnds) {
  auto s = size_sweep(8, 64, 2);
  EXPECT_EQ(s, (std::vector<std::size_t>{8, 16, 32, 64}));
}

TEST(SizeSweep, StopsBeforeExceedingMax) {
  auto s = size_sweep(3, 100, 4);
  EXPECT_EQ(s, (std::vector<std::size_t>{3, 12, 48}));
  EXPECT_EQ(size_sweep(5, 5, 2), (std::vector<std::size_t>{5}));
}

// Found by tests/fuzz (fuzz_sizes, UBSan float-cast-overflow): near 2^64,
// (double)max rounds up to 2^64, which did not convert back to size_t.
TEST(SizeSweep, LargestSizesStayInRange) {
  constexpr std::size_t top = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(size_sweep(top, top, 2), (std::vector<std::size_t>{top}));
  // 2^64 is past max even though (double)max == 2^64 (fuzz_sizes: 65 sizes).
  auto s = size_sweep(std::size_t{1} << 62, top, 2);
  EXPECT_EQ(s, (std::vector<std::size_t>{std::size_t{1} << 62, std::size_t{1} << 63}));
  EXPECT_EQ(size_sweep(1, top, 2).size(), 64u);
  EXPECT_EQ(size_sweep(top - 1, top, 2), (std::vector<std::size_t>{top - 1}));
}

TEST(SizeSweep, RejectsBadRanges) {
  EXPECT_THROW(size_sweep(64, 8, 2), UsageError);
  EXPECT_THROW(size_sweep(8, 64, 1.5), UsageError);
  EXPECT_THROW(size_sweep(8, 64, -2), UsageError);
  EXPECT_THROW(size_sweep(8, 64, std::numeric_limits<double>::quiet_NaN()), UsageError);
}

TEST(HumanBytes, Units) {
  EXPECT_EQ(human_bytes(8), "8 B");
  EXPECT_EQ(human_bytes(64u << 20), "64 MiB");
  EXPECT_EQ(human_bytes(1500), "1500 B");
}
