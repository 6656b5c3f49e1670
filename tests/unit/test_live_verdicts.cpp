// Live verdicts (src/verdicts/live_verdicts.h) on synthetic rounds runs: per-link
// times with 1 % noise, one link or host slowed 25 % from a given case on.
// The rule must name it once, after the onset, and name nothing healthy.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "collectives/patterns.h"
#include "verdicts/live_verdicts.h"

namespace gdr {
namespace {

constexpr int kIters = 10;

struct Sim {
  int hosts = 6;
  double slow = 1.25;
  int onset = 1 << 30;                                    // first slowed case
  std::function<bool(int, int)> slowed = [](int, int) { return false; };  // (sender, receiver) ranks
  unsigned seed = 1;
};

// Feeds every case of bw rounds over 3 sizes, one rank per host; returns
// (case index, finding) for each conviction.
std::vector<std::pair<int, LiveFinding>> feed(const Sim& sim, LiveSettings ls = {}) {
  Settings s;
  s.put(ls);
  LiveVerdicts live(s);
  std::vector<std::string> hosts;
  for (int h = 0; h < sim.hosts; ++h) hosts.push_back("h" + std::to_string(h));
  std::mt19937 rng(sim.seed);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<std::pair<int, LiveFinding>> out;
  int index = 0;
  const int dirs = find_test("bw")->traits.directions;
  for (std::size_t bytes : {32768u, 65536u, 131072u})
    for (int step = 0; step < patterns::steps("rounds", dirs, sim.hosts); ++step, ++index) {
      CaseRecord r;
      r.params.test = "bw";
      r.params.transport = "mpi";
      r.params.has_dtype = false;
      r.params.mem = MemKind::host;
      r.params.bytes = bytes;
      r.params.pattern = "rounds";
      r.params.step = step;
      r.params.iters = kIters;
      r.params.flows = patterns::flows("rounds", dirs, sim.hosts, step);
      r.ranks = sim.hosts;
      r.times.assign(static_cast<std::size_t>(sim.hosts) * kIters, std::numeric_limits<double>::quiet_NaN());
      for (auto [a, b] : r.params.flows) {
        const double base = bytes * 8 / 20e6 * (index >= sim.onset && sim.slowed(a, b) ? sim.slow : 1.0);
        for (int i = 0; i < kIters; ++i) r.times[a * kIters + i] = base * std::exp(noise(rng));
      }
      for (const LiveFinding& f : live.add(r, hosts)) out.emplace_back(index, f);
    }
  for (const LiveFinding& f : live.finish()) out.emplace_back(index, f);  // after the last case
  return out;
}

// 6 hosts: 30 host links a size, judged leave-out exactly; 12: 132, the others' median by index.
TEST(LiveVerdicts, SlowedLinkNamedOnceEachWayAfterTheOnset) {
  for (int hosts : {6, 12}) {
  Sim sim;
  sim.hosts = hosts;
  sim.onset = 15;  // 6 hosts: mid-way through the second size (10 steps a size); 12: in the first (22)
  sim.slowed = [](int a, int b) { return (a == 2 && b == 4) || (a == 4 && b == 2); };
  auto got = feed(sim);
  ASSERT_EQ(got.size(), 2u) << hosts;
  std::set<std::string> what;
  for (auto& [i, f] : got) {
    what.insert(f.what);
    EXPECT_EQ(f.kind, "hostlink");
    EXPECT_GE(i, sim.onset);
    EXPECT_NEAR(f.ratio, 1.25, 0.03);
    EXPECT_GE(f.outlier_in, 2);
    EXPECT_LT(f.p_value, LiveVerdicts::kAlpha);
    EXPECT_GE(f.baseline, LiveVerdicts::kMinBaseline);
    EXPECT_NE(f.json().find("\"record\":\"live_suspect\""), std::string::npos);
  }
  EXPECT_EQ(what, (std::set<std::string>{"h2>h4", "h4>h2"}));
  }
}

TEST(LiveVerdicts, HealthyRunsNameNothing) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Sim sim;
    sim.seed = seed;
    sim.hosts = seed % 2 ? 6 : 12;
    EXPECT_TRUE(feed(sim).empty()) << "seed " << seed;
  }
}

TEST(LiveVerdicts, OffNamesNothing) {
  Sim sim;
  sim.onset = 0;
  sim.slowed = [](int a, int b) { return a == 2 || b == 2; };
  EXPECT_FALSE(feed(sim).empty());
  EXPECT_TRUE(feed(sim, LiveSettings{"off", 7.0}).empty());
}

TEST(LiveVerdicts, SlowerThanMinSlowdownOnly) {
  Sim sim;
  sim.onset = 0;
  sim.slow = 1.05;  // 5 %: an outlier by z, not by --live-min-slowdown 7
  sim.slowed = [](int a, int b) { return a == 1 && b == 3; };
  EXPECT_TRUE(feed(sim).empty());
  EXPECT_EQ(feed(sim, LiveSettings{"on", 3.0}).size(), 1u);
}

TEST(LiveVerdicts, HostSendingSlowToAllIsNamedAsAHost) {
  Sim sim;
  sim.onset = 0;
  sim.slowed = [](int a, int) { return a == 3; };
  int hosts = 0;
  for (auto& [i, f] : feed(sim))
    if (f.kind == "host") {
      ++hosts;
      EXPECT_EQ(f.what, "h3");
      EXPECT_EQ(f.side, "sending");
    }
  EXPECT_EQ(hosts, 1);
}

TEST(LiveVerdicts, NoBaselineNoVerdict) {
  Sim sim;
  sim.hosts = 4;  // 12 host links between hosts: a baseline of 8 only late in each size
  sim.onset = 0;
  sim.slowed = [](int a, int b) { return a == 0 && b == 1; };
  EXPECT_EQ(feed(sim).size(), 1u);
  sim.hosts = 3;  // 6: never
  EXPECT_TRUE(feed(sim).empty());
}

// Above LiveVerdicts::kJudgeEveryCase links a size (160 hosts: 25,440) a group is judged at most
// every kJudgeEveryS seconds and at finish: the same host links and host are named, once each,
// and no healthy one.
TEST(LiveVerdicts, FleetScaleGroupsJudgedLessOftenNameTheSame) {
  Sim sim;
  sim.hosts = 160;
  sim.onset = 0;
  sim.slowed = [](int a, int) { return a == 3; };
  auto got = feed(sim);
  std::set<std::string> what;
  for (auto& [i, f] : got) {
    EXPECT_TRUE(what.insert(f.kind + " " + f.what).second) << f.what;
    EXPECT_TRUE(f.kind == "host" ? f.what == "h3" : f.what.rfind("h3>", 0) == 0) << f.what;
  }
  EXPECT_EQ(what.size(), 160u);  // h3's 159 host links and h3 itself
  EXPECT_GT(static_cast<std::size_t>(sim.hosts * (sim.hosts - 1)), LiveVerdicts::kJudgeEveryCase);
}

// The O(n log n) leave-one-out median and MAD that the retests judge a fleet's links with:
// exactly (bit for bit) the copy-the-others way, with ties and NaNs.
TEST(Outlier, LeaveOneOutEqualsTheBruteForce) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 13);
    std::vector<double> v(n);
    for (double& x : v) x = normal(rng);
    if (rng() % 3 == 0) v[rng() % n] = std::numeric_limits<double>::quiet_NaN();
    if (rng() % 5 < 2)
      for (double& x : v) x = std::round(x);  // ties
    const auto loo = outlier::loo_robust(v);
    for (int i = 0; i < n; ++i) {
      std::vector<double> others(v);
      others.erase(others.begin() + i);
      const auto want = outlier::robust(others);
      auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
      ASSERT_TRUE(same(loo[i].first, want.first) && same(loo[i].second, want.second))
          << "trial " << trial << " i " << i << ": " << loo[i].first << "," << loo[i].second << " want "
          << want.first << "," << want.second;
    }
  }
}

}  // namespace
}  // namespace gdr
