#include <gtest/gtest.h>

#include "src/core/errors.h"
#include "options/options.h"
#include "parse_run_options.h"

using namespace gdr;

namespace {
RunOptions parse(std::vector<std::string> argv) { return test::parse_run_options(std::move(argv)); }
}  // namespace

TEST(Options, Defaults) {
  RunOptions o = parse({});
  EXPECT_EQ(o.tests, (std::vector<std::string>{"allreduce", "latency", "bw"}));
  EXPECT_EQ(o.mems, (std::vector<MemKind>{MemKind::host}));
  EXPECT_EQ(o.sizes.front(), 8u);
  EXPECT_EQ(o.sizes.back(), 64u << 20);
  EXPECT_EQ(o.sizes.size(), 24u);
  EXPECT_EQ(o.iters, 0);  // auto
  EXPECT_EQ(o.window, 64);
  EXPECT_EQ(o.slots, 0);  // auto
  EXPECT_DOUBLE_EQ(o.case_time, 1.0);
  EXPECT_EQ(o.warmup, -1);  // auto
  EXPECT_EQ(o.dtypes, (std::vector<DType>{DType::f32}));
  EXPECT_EQ(o.ops, (std::vector<Op>{Op::sum}));
  EXPECT_EQ(o.check, gdr::CheckMode::after);
  EXPECT_EQ(o.references, (std::vector<std::string>{"mpi"}));
  EXPECT_DOUBLE_EQ(o.timeout, 60);
  EXPECT_EQ(o.pairs, Pairs::fixed);
  EXPECT_TRUE(o.transports_defaulted);
  EXPECT_NE(std::find(o.transports.begin(), o.transports.end(), "mpi"), o.transports.end());
}

TEST(Options, ListsAreParsedAndDeduplicated) {
  RunOptions o = parse({"-t", "bw,latency,bw", "-d", "half,bfloat16", "-o", "max,min",
                        "--pairs", "all", "--reference", "none"});
  EXPECT_EQ(o.tests, (std::vector<std::string>{"bw", "latency"}));
  EXPECT_EQ(o.dtypes, (std::vector<DType>{DType::f16, DType::bf16}));
  EXPECT_EQ(o.ops, (std::vector<Op>{Op::max, Op::min}));
  EXPECT_EQ(o.pairs, Pairs::all);
  EXPECT_TRUE(o.references.empty());
}

TEST(Options, BadValuesAreUsageErrors) {
  std::vector<std::vector<std::string>> bad = {
      {"-t", "alltoall"}, {"-T", "carrier-pigeon"}, {"-m", "disk"}, {"--path", "sideways"},
      {"-b", "0"},        {"-e", "-1"},             {"-b", "1M", "-e", "1K"},
      {"-f", "1"},        {"-n", "0"},              {"-w", "-1"},
      {"-d", "float8"},   {"-o", "xor"},            {"-c", "2"},
      {"--reference", "gloo"}, {"--timeout", "0"}, {"--pairs", "star"},
      {"--window", "0"},  {"--chunk", "0"},         {"-t", ""},
      // found by tests/fuzz (fuzz_options): a deadline this far away overflowed
      {"--timeout", "inf"}, {"--timeout", "1e300"}, {"--timeout", "nan"},
  };
  for (auto& argv : bad) EXPECT_THROW(parse(argv), UsageError) << argv[0] << " " << argv.back();
}

TEST(Options, P2pNeedsTwoRanks) {
  RunOptions o = parse({"-t", "latency"});
  EXPECT_THROW(validate_for_ranks(o, 1), UsageError);
  EXPECT_NO_THROW(validate_for_ranks(o, 2));
  RunOptions a = parse({"-t", "allreduce"});
  EXPECT_NO_THROW(validate_for_ranks(a, 1));
}

TEST(SplitList, DropsEmptyAndDuplicates) {
  EXPECT_EQ(split_list("a,,b,a,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(split_list("").empty());
}
