// The planner as a value (src/planning/plan.h, schedule.h): a plan depends on the options and
// the schedule's decisions alone, passed as arguments; two plans of one process never see each
// other's round limit or host map, and the options are never rewritten. Without MPI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "collectives/host_rounds.h"
#include "collectives/test.h"
#include "memory/memory.h"
#include "options/options.h"
#include "parse_run_options.h"
#include "planning/plan.h"
#include "planning/schedule.h"
#include "transports/transport.h"

using namespace gdr;

namespace {

RunOptions parse(std::vector<std::string> argv) { return test::parse_run_options(std::move(argv)); }

const std::vector<std::string> kRounds = {"-t", "bw", "-T", "mpi", "-m", "host", "--pattern", "rounds",
                                          "-b", "8", "-e", "64", "-f", "8"};

std::vector<std::string> with(std::vector<std::string> a, std::vector<std::string> more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::set<int> rounds_planned(const RunPlan& p) {
  std::set<int> r;
  for (const Planned& c : p.cases) r.insert(round_of(c.params));
  return r;
}

std::shared_ptr<const patterns::HostMap> hosts(int n_hosts, int per_host) {
  std::vector<std::string> names;
  for (int h = 0; h < n_hosts; ++h)
    for (int r = 0; r < per_host; ++r) names.push_back("host" + std::to_string(h));
  return std::make_shared<const patterns::HostMap>(patterns::host_map(names));
}

}  // namespace

TEST(Plan, LaysOutWhatItIsGivenAndNothingElse) {
  const RunOptions opt = parse(kRounds);
  const RunPlan all = plan_run(opt, PlanInputs{patterns::Layout(8), 0.5});
  const RunPlan two = plan_run(opt, PlanInputs{patterns::Layout(8, 2, nullptr), 0.5});
  const RunPlan again = plan_run(opt, PlanInputs{patterns::Layout(8), 0.5});
  // 7 rounds over 8 ranks, 2 steps (one a direction) x 2 sizes each.
  EXPECT_EQ(all.cases.size(), 7u * 2 * 2);
  EXPECT_EQ(two.cases.size(), 2u * 2 * 2);
  EXPECT_EQ(rounds_planned(two), (std::set<int>{0, 1}));
  EXPECT_EQ(again.cases.size(), all.cases.size());  // the other plan's limit did not leak
  for (const Planned& c : two.cases) EXPECT_DOUBLE_EQ(c.params.case_time, 0.5);
  EXPECT_EQ(two.inputs.layout.max_rounds, 2);
}

TEST(Plan, HostRoundsFollowTheLayoutsHostMap) {
  const RunOptions opt = parse(with(kRounds, {"--pattern", "host-rounds"}));
  const RunPlan p = plan_run(opt, PlanInputs{patterns::Layout(8, 0, hosts(4, 2)), 1.0});
  // 3 rounds over 4 hosts, 2 directions, 2 sizes; every flow joins two hosts, rail to rail.
  ASSERT_EQ(p.cases.size(), 3u * 2 * 2);
  for (const Planned& c : p.cases)
    for (auto [a, b] : c.params.flows) {
      EXPECT_NE(a / 2, b / 2) << "a flow within one host";
      EXPECT_EQ(a % 2, b % 2) << "a flow across rails";
    }
  // No host map: host-rounds has nothing to plan (the schedule refuses it before planning).
  EXPECT_TRUE(plan_run(opt, PlanInputs{patterns::Layout(8), 1.0}).cases.empty());
  EXPECT_EQ(needed_peers(opt, p.inputs.layout, 0), (std::vector<int>{2, 4, 6}));
}

TEST(Schedule, MaxRoundsIsTheLayoutsNotAGlobal) {
  const RunOptions limited = parse(with(kRounds, {"--max-rounds", "3"}));
  const RunOptions every = parse(kRounds);
  const Scheduled a = schedule_run(limited, 8, nullptr);
  const Scheduled b = schedule_run(every, 8, nullptr);
  ASSERT_EQ(a.problem, "");
  EXPECT_EQ(rounds_planned(a.plan), (std::set<int>{0, 1, 2}));
  EXPECT_EQ(rounds_planned(b.plan).size(), 7u);
  EXPECT_EQ(a.plan.inputs.layout.max_rounds, 3);
  EXPECT_EQ(b.plan.inputs.layout.max_rounds, 0);
}

TEST(Schedule, BudgetDecidesInThePlanAndLeavesTheOptions) {
  const RunOptions opt = parse(with(kRounds, {"--budget", "60"}));
  const double asked = opt.case_time;
  const Scheduled s = schedule_run(opt, 8, hosts(8, 1));
  ASSERT_EQ(s.problem, "");
  EXPECT_DOUBLE_EQ(opt.case_time, asked);  // options are read, never written
  EXPECT_NE(s.plan.inputs.case_time, asked);  // 28 cases share what 60 s leaves: 1.434 s each
  EXPECT_GT(s.plan.inputs.case_time, 0.0);
  for (const Planned& c : s.plan.cases) EXPECT_DOUBLE_EQ(c.params.case_time, s.plan.inputs.case_time);
  std::string fact;
  for (auto& [k, v] : s.plan.facts)
    if (k == "budget.case_time_s") fact = v;
  EXPECT_EQ(fact, fmt::format("{:.3f}", s.plan.inputs.case_time));
  EXPECT_EQ(s.plan.budget_rounds, 0);  // every round fits 60 s
}

TEST(Schedule, ABudgetForSomeRoundsStartsWithThemInThePlan) {
  // 64 ranks: 63 rounds x 2 steps x 2 sizes = 252 cases; 60 s fits a sample of rounds only.
  const RunOptions opt = parse(with(kRounds, {"--budget", "60"}));
  const Scheduled s = schedule_run(opt, 64, hosts(64, 1));
  ASSERT_EQ(s.problem, "");
  EXPECT_GT(s.plan.budget_rounds, 0);
  EXPECT_LT(s.plan.budget_rounds, 63);
  EXPECT_EQ(s.plan.inputs.layout.max_rounds, 0);  // planned whole; the budget paces the rounds
  // And too small for even one round: one line, no plan.
  const Scheduled none = schedule_run(parse(with(kRounds, {"--budget", "3"})), 64, hosts(64, 1));
  EXPECT_NE(none.problem.find("--budget 3 s is below the minimum"), std::string::npos) << none.problem;
}

// --hca binds a rank to its NIC for host-rounds' rails as GDR_VERBS_HCA does, and the flag wins.
TEST(Schedule, TheHcaFlagBindsTheRail) {
  if (!find_transport("verbs")) GTEST_SKIP() << "verbs transport not built";
  unsetenv("UCX_NET_DEVICES");
  setenv("GDR_VERBS_HCA", "mlx5_0:1", 1);
  std::string where;
  EXPECT_EQ(bound_nic(parse({}).settings, &where), "mlx5_0");
  EXPECT_EQ(bound_nic(parse({"--hca", "mlx5_3:1"}).settings, &where), "mlx5_3");
  EXPECT_NE(where.find("--hca"), std::string::npos) << where;
  unsetenv("GDR_VERBS_HCA");
  EXPECT_EQ(bound_nic(parse({"--hca", "mlx5_2"}).settings), "mlx5_2");
  EXPECT_EQ(bound_nic(parse({}).settings), "");
  setenv("UCX_NET_DEVICES", "mlx5_1:1,mlx5_2:1", 1);  // several: no one rail
  EXPECT_EQ(bound_nic(parse({}).settings), "");
  unsetenv("UCX_NET_DEVICES");
}

namespace {

// The copy rows of a plan: (name, bytes) in plan order, and each one's index.
struct CopyRows {
  std::vector<std::pair<std::string, std::size_t>> rows;
  std::vector<std::size_t> at;
};
CopyRows copy_rows(const RunPlan& p) {
  CopyRows c;
  for (std::size_t i = 0; i < p.cases.size(); ++i)
    if (p.cases[i].key.reference && p.cases[i].key.name.rfind("copy-", 0) == 0) {
      c.rows.emplace_back(p.cases[i].key.name, p.cases[i].params.bytes);
      c.at.push_back(i);
    }
  return c;
}

const std::vector<std::string> kDeviceBw = {"-t", "bw", "-T", "mpi", "-m", "cuda", "-b", "1M", "-e", "256M", "-f", "16"};

}  // namespace

// A default device bw run plans the copy rows its %peak and path-by-speed verdict need (the
// GPU is not needed to plan: this is the plan real option parsing gives), cheap, before the
// first row they bound; host memory, latency alone and any --reference leave them out.
TEST(Plan, DefaultDeviceBwRunPlansTheCopyRowsItsVerdictNeeds) {
  if (!find_reference("copy-d2d", "bw")) GTEST_SKIP() << "built without CUDA: no copy rows";
  const PlanInputs in{patterns::Layout(2), 1.0};
  const RunPlan p = plan_run(parse(kDeviceBw), in);
  const CopyRows c = copy_rows(p);
  std::vector<std::pair<std::string, std::size_t>> want;
  for (std::string name : {"copy-d2d", "copy-d2h", "copy-h2d"})
    for (std::size_t b : {1u << 20, 16u << 20, 256u << 20}) want.emplace_back(name, b);
  EXPECT_EQ(c.rows, want);
  std::size_t first_bw = p.cases.size();
  for (std::size_t i = 0; i < p.cases.size(); ++i)
    if (!p.cases[i].key.reference && p.cases[i].key.test == "bw") first_bw = std::min(first_bw, i);
  for (std::size_t i : c.at) {
    const CaseParams& r = p.cases[i].params;
    EXPECT_LT(i, first_bw) << "a ceiling after the rows it bounds";
    EXPECT_LE(r.case_time, 0.2);
    EXPECT_LE(r.bytes * static_cast<std::size_t>(r.window), std::size_t{1} << 30);
    EXPECT_GE(r.window, 1);
    EXPECT_EQ(r.check, CheckMode::none);
  }
  EXPECT_EQ(p.cases[c.at[0]].params.window, 64);  // 1 MiB: the bw rows' window
  EXPECT_EQ(p.cases[c.at[2]].params.window, 4);   // 256 MiB: 1 GiB a window
  EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](auto& n) { return n.find("--reference none") != std::string::npos; }));
  // bibw alone, and the staged path alone: the copies still run (on the direct path, once).
  EXPECT_EQ(copy_rows(plan_run(parse(with(kDeviceBw, {"-t", "bibw", "--path", "staged"})), in)).rows, want);
  EXPECT_EQ(copy_rows(plan_run(parse(with(kDeviceBw, {"-t", "latency,bw,bibw"})), in)).rows, want);  // once a run
  // Not for host memory, a latency run, --reference none or a --reference given.
  EXPECT_TRUE(copy_rows(plan_run(parse(with(kDeviceBw, {"-m", "host"})), in)).rows.empty());
  EXPECT_TRUE(copy_rows(plan_run(parse(with(kDeviceBw, {"-t", "latency"})), in)).rows.empty());
  EXPECT_TRUE(copy_rows(plan_run(parse(with(kDeviceBw, {"--reference", "none"})), in)).rows.empty());
  EXPECT_TRUE(copy_rows(plan_run(parse(with(kDeviceBw, {"--reference", "mpi"})), in)).rows.empty());
  // Asked for by name: that row alone, in the bw rows' window, as before (the named row asks the
  // device whether it can run: here only where one answers).
  if (!memory_ops(MemKind::cuda)->unavailable_reason().empty()) return;
  const CopyRows d2d = copy_rows(plan_run(parse(with(kDeviceBw, {"--reference", "copy-d2d"})), in));
  EXPECT_EQ(d2d.rows.size(), 3u);
  const RunPlan named = plan_run(parse(with(kDeviceBw, {"--reference", "copy-d2d"})), in);
  for (std::size_t i : d2d.at) EXPECT_EQ(named.cases[i].params.window, 64);
}
