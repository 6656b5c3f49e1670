// The host-level schedule (collectives/host_rounds.h) and the --budget model
// (src/planning/schedule.h): every host pair meets exactly once, each round a
// matching, each rank against its rail partner, uneven hosts refused.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/host_rounds.h"
#include "core/errors.h"
#include "planning/schedule.h"

namespace gdr::patterns {
namespace {

// H hosts x G ranks, launched by node (rank = host * G + local).
std::vector<std::string> hostnames(int hosts, int per) {
  std::vector<std::string> v;
  for (int h = 0; h < hosts; ++h)
    for (int g = 0; g < per; ++g) v.push_back("node" + std::to_string(h));
  return v;
}

TEST(HostRounds, EveryHostPairOnceEachRoundAMatching) {
  for (int hosts = 2; hosts <= 17; ++hosts) {
    std::map<std::pair<int, int>, int> met;
    for (int r = 0; r < rounds(hosts); ++r) {
      std::set<int> busy;
      for (auto [a, b] : host_pairs(hosts, r)) {
        ASSERT_LT(a, b);
        ASSERT_TRUE(busy.insert(a).second && busy.insert(b).second) << hosts << " hosts, round " << r;
        met[{a, b}]++;
      }
      EXPECT_GE(busy.size(), static_cast<std::size_t>(hosts - hosts % 2));  // at most one host rests
    }
    EXPECT_EQ(met.size(), static_cast<std::size_t>(hosts * (hosts - 1) / 2)) << hosts;
    for (auto& [p, k] : met) EXPECT_EQ(k, 1) << hosts << ": " << p.first << "-" << p.second;
  }
}

TEST(HostRounds, RanksMeetTheirRailPartnerOnEveryOtherHost) {
  // Round-robin placement too (rank = local * H + host): rails follow the
  // host's own rank order, not the rank number.
  for (bool by_node : {true, false}) {
    const int hosts = 5, per = 4;
    std::vector<std::string> names(hosts * per);
    for (int r = 0; r < hosts * per; ++r) names[r] = "n" + std::to_string(by_node ? r / per : r % hosts);
    const HostMap m = host_map(names);
    ASSERT_EQ(host_rounds_problem(m), "");
    std::map<std::pair<int, int>, int> met;
    for (int r = 0; r < rounds(hosts); ++r) {
      std::set<int> busy;
      for (auto [a, b] : host_round_flows(m, r)) {
        EXPECT_NE(m.host[a], m.host[b]);
        EXPECT_EQ(m.rail[a], m.rail[b]);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second);
        met[{a, b}]++;
      }
    }
    // Every host pair on every rail, once.
    EXPECT_EQ(met.size(), static_cast<std::size_t>(per * hosts * (hosts - 1) / 2));
  }
}

TEST(HostRounds, NicsSetTheRailsWhenEveryHostHasTheSameOnes) {
  // Host b's ranks list their NICs in another order: rail = NIC, not local index.
  const HostMap m = host_map({"a", "a", "b", "b"}, {"mlx5_0", "mlx5_1", "mlx5_1", "mlx5_0"});
  EXPECT_EQ(host_round_flows(m, 0), (std::vector<Flow>{{0, 3}, {1, 2}}));
  EXPECT_TRUE(m.by_nic);
  // A NIC unknown on one rank: local index.
  const HostMap l = host_map({"a", "a", "b", "b"}, {"mlx5_0", "", "mlx5_1", "mlx5_0"});
  EXPECT_EQ(host_round_flows(l, 0), (std::vector<Flow>{{0, 2}, {1, 3}}));
  EXPECT_FALSE(l.by_nic);
  // Every rank of a host bound to the same NIC: no one rail a rank, local index.
  EXPECT_FALSE(host_map({"a", "a", "b", "b"}, {"mlx5_0", "mlx5_0", "mlx5_0", "mlx5_0"}).by_nic);
}

TEST(HostRounds, OneHostOrUnevenHostsRefusedInOneLine) {
  const std::string one = host_rounds_problem(host_map(hostnames(1, 4)));
  EXPECT_NE(one.find("2 or more hosts"), std::string::npos) << one;
  const std::string uneven = host_rounds_problem(host_map({"a", "a", "b", "c", "c"}));
  EXPECT_NE(uneven.find("same number of ranks on every host: a has 2, b has 1"), std::string::npos) << uneven;
  EXPECT_EQ(uneven.find('\n'), std::string::npos);
}

TEST(HostRounds, RegisteredPatternPlansOnTheLayoutsHostMap) {
  const Layout six(6, 0, std::make_shared<const HostMap>(host_map(hostnames(3, 2))));
  EXPECT_EQ(steps("host-rounds", 1, six), 6);  // 3 rounds (odd hosts: one rests), each way
  EXPECT_EQ(steps("host-rounds", 2, six), 3);
  EXPECT_EQ(steps("rounds", 1, six), 10);
  // Round 0 over 3 hosts: host 0 rests, hosts 1-2 meet; step 1 is its reverse.
  EXPECT_EQ(flows("host-rounds", 1, six, 1), (std::vector<Flow>{{4, 2}, {5, 3}}));
  EXPECT_EQ(peers("host-rounds", 1, six, 0), (std::vector<int>{2, 4}));
  const Layout other(8, 0, six.hosts);
  EXPECT_EQ(steps("host-rounds", 1, other), 0);  // a map of other ranks: nothing planned
  EXPECT_EQ(steps("host-rounds", 1, Layout(3, 0, std::make_shared<const HostMap>(host_map({"a", "a", "b"})))), 0);
  EXPECT_EQ(steps("host-rounds", 1, 6), 0);  // no host map: nothing planned
}

// --max-rounds: the first N rounds of either tournament, the same rounds as without it.
TEST(HostRounds, RoundLimitRunsTheFirstRoundsOnly) {
  auto map = std::make_shared<const HostMap>(host_map(hostnames(4, 2)));
  const Layout all(8, 0, map), two(8, 2, map), nine(8, 9, map);
  const std::vector<Flow> first = flows("host-rounds", 1, all, 0), second = flows("host-rounds", 1, all, 2);
  EXPECT_EQ(steps("host-rounds", 1, two), 4);  // 2 of 3 rounds, each way
  EXPECT_EQ(steps("host-rounds", 2, two), 2);
  EXPECT_EQ(steps("rounds", 1, two), 4);       // 2 of 7 over the ranks
  EXPECT_EQ(flows("host-rounds", 1, two, 0), first);
  EXPECT_EQ(flows("host-rounds", 1, two, 2), second);
  EXPECT_EQ(describe_rounds(4, 2), "0-3 1-2; 1-3 0-2");
  EXPECT_EQ(steps("host-rounds", 1, nine), 6);  // more than there are: all
  EXPECT_EQ(steps("host-rounds", 1, all), 6);   // the limit is the layout's alone: none leaks
}

}  // namespace
}  // namespace gdr::patterns

namespace gdr {
namespace {

TEST(Budget, DurationsAndTheCaseTimeThatFits) {
  EXPECT_EQ(parse_duration("90", "--budget"), 90);
  EXPECT_EQ(parse_duration("90s", "--budget"), 90);
  EXPECT_EQ(parse_duration("2m", "--budget"), 120);
  EXPECT_EQ(parse_duration("1.5h", "--budget"), 5400);
  for (const char* bad : {"", "x", "-3s", "0", "5d", "2mm", "1e9h"})
    EXPECT_THROW(parse_duration(bad, "--budget"), UsageError) << bad;
  // validate's model (results/gdranalysis/schedule.py): start 0.25 s a host + 2 s.
  const BudgetPlan b = fit_budget(60, 12, 2);
  EXPECT_NEAR(b.start_s, 2.5, 1e-9);
  EXPECT_NEAR(b.case_time_s, ((60 - 2.5) / 12 - 0.35) / 1.15, 1e-9);
  EXPECT_NEAR(b.start_s + b.cases * b.per_case_s, 60, 1e-9);
  EXPECT_NEAR(b.min_budget_s, 2.5 + 12 * (0.35 + 1.15 * 0.2), 1e-9);
}

TEST(Budget, PacerGivesEachCaseItsShareOfWhatIsLeft) {
  BudgetPacer p(20, 2.5, 5);
  // First case at 2 s, 4 cases: the model's 0.35 s overhead, 2.5 s outside the processes.
  const double t0 = p.next(2, 4);
  EXPECT_NEAR(t0, ((20 - 2.5 - 2) / 4 - 0.35) / 1.15, 1e-9);
  // It took its time plus 1 s: that overhead is learnt, the rest share what is left.
  const double e1 = 2 + t0 + 1;
  EXPECT_NEAR(p.next(e1, 3), ((20 - 2.5 - e1) / 3 - 1.0) / 1.15, 1e-9);
  // Behind: the fewest iterations from here on, never a negative time.
  EXPECT_EQ(p.next(25, 2), 0.01);
  // Ahead (a share of 20 s): never more than the plan's 5 s.
  BudgetPacer q(100, 2.5, 5);
  EXPECT_EQ(q.next(2, 4), 5);
  auto facts = p.facts(19);
  EXPECT_EQ(facts[1], (std::pair<std::string, std::string>{"budget.kept", "no"}));
}

// A stretch of cases as plan() makes it, size by size: `pairs` pair cases, then `rounds` rounds of
// host-rounds, one step a direction.
std::vector<Planned> size_major(std::string test, std::vector<std::size_t> sizes, int rounds, int pairs = 0) {
  std::vector<Planned> out;
  for (std::size_t bytes : sizes) {
    CaseParams c;
    c.test = test;
    c.bytes = bytes;
    for (int k = 0; k < pairs; ++k) out.push_back({{test, "mpi", false, MemKind::host, Path::direct}, c});
    c.pattern = "host-rounds";
    for (int step = 0; step < 2 * rounds; ++step) {
      c.step = step;
      out.push_back({{test, "mpi", false, MemKind::host, Path::direct, "host-rounds"}, c});
    }
  }
  return out;
}

TEST(Budget, RoundsRunRoundByRoundInEverySize) {
  std::vector<Planned> cases = size_major("bw", {4096, 8192}, 2, 1), lat = size_major("latency", {8}, 2);
  cases.insert(cases.end(), lat.begin(), lat.end());
  order_rounds_first(cases);
  std::vector<std::tuple<std::string, std::size_t, int>> got;
  for (auto& p : cases) got.emplace_back(p.params.test, p.params.bytes, p.params.step);
  EXPECT_EQ(got, (std::vector<std::tuple<std::string, std::size_t, int>>{
                     {"bw", 4096, -1}, {"bw", 8192, -1},                  // other patterns first
                     {"bw", 4096, 0}, {"bw", 4096, 1}, {"bw", 8192, 0}, {"bw", 8192, 1},  // round 1
                     {"bw", 4096, 2}, {"bw", 4096, 3}, {"bw", 8192, 2}, {"bw", 8192, 3},  // round 2
                     {"latency", 8, 0}, {"latency", 8, 1}, {"latency", 8, 2}, {"latency", 8, 3}}));
  CaseParams both;
  both.pattern = "rounds";
  both.step = 3;
  both.traits.directions = 2;  // bibw: a round is one step
  EXPECT_EQ(round_of(both), 3);
  both.pattern = "incast";
  EXPECT_EQ(round_of(both), -1);
}

// Steps through a stretch as the sweep does: every case that runs costs `per_case` s.
std::vector<int> rounds_that_ran(RoundBudget& rb, const std::vector<Planned>& cases, double& left, double per_case,
                                 double overhead) {
  std::vector<int> ran;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!rb.runs(i, left, overhead)) continue;
    left -= per_case;
    if (int r = round_of(cases[i].params); r >= 0 && (ran.empty() || ran.back() != r)) ran.push_back(r);
  }
  return ran;
}

TEST(Budget, CalibratedRoundsGrowOnAFastFabricAndStopAtARoundsEndOnASlowOne) {
  std::vector<Planned> cases = size_major("bw", {4096, 8192, 16384}, 5);
  order_rounds_first(cases);  // 5 rounds x 2 directions x 3 sizes
  // The model fitted 2 rounds; a case costs 0.01 s beside its timed work: every round fits.
  RoundBudget fast(cases, 2, 0);
  EXPECT_EQ(fast.cases_left(), 12u);
  double left = 100;
  EXPECT_EQ(rounds_that_ran(fast, cases, left, 0.3, 0.01), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(fast.rounds_run(), 5);
  EXPECT_EQ(fast.rounds_planned(), 5);
  // A case costs 1 s beside its timed work, 1.0115 s at the pacer's floor of timed work; 6 cases
  // a round. With 20 s left at the start, 3 rounds fit (18.2 s), not 4 (24.3 s): the plan's 5
  // shrink to 3. Each case here then takes 1.23 s, so at round 3 one more round's 6.1 s is more
  // than the 5.2 s left: it stops there, and no later round of the stretch begins.
  RoundBudget slow(cases, 0, 0);
  left = 20;
  EXPECT_EQ(rounds_that_ran(slow, cases, left, 1.23, 1.0), (std::vector<int>{0, 1}));
  EXPECT_EQ(slow.rounds_run(), 2);
  ASSERT_EQ(slow.decisions().size(), 2u);
  EXPECT_NE(slow.decisions()[0].find("round 1: 3 of the 5 rounds fit"), std::string::npos) << slow.decisions()[0];
  EXPECT_NE(slow.decisions()[1].find("round 3: 2 of the 5 rounds fit"), std::string::npos) << slow.decisions()[1];
  // Where the plan's rounds fit at the floor, they all run (the pacer shortens the cases):
  // 30 cases at 1.0115 s is 30.3 s.
  RoundBudget tight(cases, 0, 0);
  left = 31;
  EXPECT_EQ(rounds_that_ran(tight, cases, left, 1.0, 1.0), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(tight.decisions().empty());
  // Even with no time left, round 1 runs; the retests' cases are counted in what is paced.
  RoundBudget none(cases, 0, 4);
  left = 0;
  EXPECT_EQ(rounds_that_ran(none, cases, left, 1.0, 1.0), (std::vector<int>{0}));
  RoundBudget counted(cases, 0, 4);
  ASSERT_TRUE(counted.runs(0, 1000, 0.01));
  EXPECT_EQ(counted.cases_left(), 30u + 4u);
  // Nothing measured yet (the first case): the model's 2 rounds stand until a case has run.
  RoundBudget first(cases, 2, 0);
  ASSERT_TRUE(first.runs(0, 1000, -1));
  EXPECT_EQ(first.cases_left(), 12u);
  EXPECT_TRUE(first.decisions().empty());
}

}  // namespace
}  // namespace gdr
