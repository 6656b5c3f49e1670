#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/core/errors.h"
#include "core/launcher.h"
#include "options/numbers.h"
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

namespace {
// The flags a rule's flag needs beside it to be read at all.
std::vector<std::string> with(const NumberRule& r, const std::string& v) {
  std::vector<std::string> argv = {"-t", "bw", "--pattern", "rounds"};
  argv.push_back(fmt::format("{}={}", r.name, v));  // "=": -inf is a value, not a flag
  return argv;
}

std::vector<std::string> bad_values(const NumberRule& r) {
  std::vector<std::string> v = {"nan", "inf", "-inf", "abc", "1e400", " 5", "5x"};
  v.push_back(fmt::format("{:.17g}", r.open_lo ? r.lo : r.lo - (r.whole ? 1 : 1e-3)));
  v.push_back(fmt::format("{:.17g}", r.whole ? r.hi + 1 : r.hi * 1.001));
  if (r.whole) v.insert(v.end(), {"1.5", "1e3", "99999999999999999999"});
  return v;
}
}  // namespace

// Every numeric flag of `run` reads through options/numbers.h: what is not a number of its
// type, not finite, or just outside its range is one UsageError naming the flag, the value
// and the range; both ends of the range pass.
TEST(Options, NumbersRefused) {
  ASSERT_GE(number_rules().size(), 9u);
  for (const NumberRule& r : number_rules()) {
    for (const std::string& v : bad_values(r)) {
      try {
        parse(with(r, v));
        ADD_FAILURE() << r.name << " '" << v << "' was accepted";
      } catch (const UsageError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(range_text(r)), std::string::npos) << what;
        EXPECT_NE(what.find(std::string(r.name)), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      }
    }
    const double lo = r.open_lo ? r.lo + (r.whole ? 1 : 1e-3) : r.lo;
    for (double v : {lo, r.hi}) EXPECT_NO_THROW(parse(with(r, fmt::format("{:.17g}", v)))) << r.name << " " << v;
  }
}

// Host memory has one path: --path staged for it alone is refused, not dropped without a word.
TEST(Options, PathStagedNeedsDeviceMemory) {
  EXPECT_THROW(parse({"-m", "host", "--path", "staged"}), UsageError);
  EXPECT_THROW(parse({"--path", "direct,staged,staged"}), UsageError);
  EXPECT_NO_THROW(parse({"-m", "host", "--path", "direct"}));
  EXPECT_NO_THROW(parse({"-m", "host"}));
}

// --reference none stands alone; in a list it is named, with the values allowed.
TEST(Options, ReferenceNoneStandsAlone) {
  EXPECT_NO_THROW(parse({"--reference", "none"}));
  try {
    parse({"--reference", "none,mpi"});
    ADD_FAILURE() << "none,mpi accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("none stands alone"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mpi"), std::string::npos) << e.what();
  }
}

// The launcher's numbers read through the same reader; one that is not a whole number in range
// is taken as unset (read before MPI is up, by every rank), never atoi's 0 or a negative rank.
TEST(Options, LauncherNumbersOutOfRangeAreUnset) {
  EXPECT_EQ(launcher::whole_or("7", 0), 7);
  EXPECT_EQ(launcher::whole_or(nullptr, 1), 1);
  for (const char* bad : {"-1", "1e3", "x", "", " 3", "99999999999", "16777216"})
    EXPECT_EQ(launcher::whole_or(bad, 5), 5) << bad;
}
