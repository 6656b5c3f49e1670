// The host-level schedule (collectives/host_rounds.h) and the --budget model
// (src/schedule.h): every host pair meets exactly once, each round a
// matching, each rank against its rail partner, uneven hosts refused.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "collectives/host_rounds.h"
#include "core/errors.h"
#include "schedule.h"

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

TEST(HostRounds, RegisteredPatternPlansOnTheRunsHostMap) {
  set_run_host_map(host_map(hostnames(3, 2)));
  EXPECT_EQ(steps("host-rounds", 1, 6), 6);  // 3 rounds (odd hosts: one rests), each way
  EXPECT_EQ(steps("host-rounds", 2, 6), 3);
  EXPECT_EQ(steps("rounds", 1, 6), 10);
  // Round 0 over 3 hosts: host 0 rests, hosts 1-2 meet; step 1 is its reverse.
  EXPECT_EQ(flows("host-rounds", 1, 6, 1), (std::vector<Flow>{{4, 2}, {5, 3}}));
  EXPECT_EQ(peers("host-rounds", 1, 6, 0), (std::vector<int>{2, 4}));
  EXPECT_EQ(steps("host-rounds", 1, 8), 0);  // a map of other ranks: nothing planned
  set_run_host_map(host_map({"a", "a", "b"}));
  EXPECT_EQ(steps("host-rounds", 1, 3), 0);
  set_run_host_map({});
}

// --max-rounds: the first N rounds of either tournament, the same rounds as without it.
TEST(HostRounds, RoundLimitRunsTheFirstRoundsOnly) {
  set_run_host_map(host_map(hostnames(4, 2)));
  const std::vector<Flow> first = flows("host-rounds", 1, 8, 0), second = flows("host-rounds", 1, 8, 2);
  set_round_limit(2);
  EXPECT_EQ(steps("host-rounds", 1, 8), 4);  // 2 of 3 rounds, each way
  EXPECT_EQ(steps("host-rounds", 2, 8), 2);
  EXPECT_EQ(steps("rounds", 1, 8), 4);       // 2 of 7 over the ranks
  EXPECT_EQ(flows("host-rounds", 1, 8, 0), first);
  EXPECT_EQ(flows("host-rounds", 1, 8, 2), second);
  EXPECT_EQ(describe_rounds(4), "0-3 1-2; 1-3 0-2");
  set_round_limit(9);  // more than there are: all
  EXPECT_EQ(steps("host-rounds", 1, 8), 6);
  set_round_limit(0);
  set_run_host_map({});
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

}  // namespace
}  // namespace gdr
