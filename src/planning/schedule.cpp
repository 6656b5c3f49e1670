// The run's schedule and budget (schedule.h).
#include "planning/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "doctor/facts.h"
#include "memory/memory.h"
#include "planning/retest.h"

namespace gdr {
namespace {

bool uses(const RunOptions& o, std::string_view p) {
  return std::find(o.patterns.begin(), o.patterns.end(), p) != o.patterns.end();
}

std::string joined(const std::vector<int>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

int hosts_of(const patterns::Layout& at) { return at.hosts ? at.hosts->hosts() : 0; }

// The rounds of host pairs run when the first `limit` run (0: all).
std::vector<std::pair<std::string, std::string>> host_rounds_run(const patterns::Layout& at, int limit) {
  const int hosts = hosts_of(at);
  return {{"schedule.host_rounds.rounds", fmt::format("{}", patterns::rounds_run(hosts, limit))},
          {"schedule.host_rounds.host_pairs", patterns::describe_rounds(hosts, limit)}};
}

// The host-rounds facts and the line printed at start.
void host_rounds_record(RunPlan& plan) {
  const patterns::Layout& at = plan.inputs.layout;
  const patterns::HostMap& m = *at.hosts;
  const int ranks = at.ranks;
  const int r = patterns::rounds_run(m.hosts(), at.max_rounds), all = patterns::rounds(m.hosts());
  plan.facts.emplace_back("schedule.host_rounds.hosts", fmt::format("{}", fmt::join(m.names, ",")));
  plan.facts.emplace_back("schedule.host_rounds.rank_host", joined(m.host));
  plan.facts.emplace_back("schedule.host_rounds.rank_rail", joined(m.rail));
  plan.facts.emplace_back("schedule.host_rounds.rails", m.rails_from.empty() ? "local index" : m.rails_from);
  for (auto& kv : host_rounds_run(at, at.max_rounds)) plan.facts.push_back(kv);
  plan.notes.push_back(fmt::format(
      "host-rounds: {} hosts x {} ranks, {} rounds of host pairs (x2 steps for one-way tests), each rank against "
      "the rank on the same rail of the other host, rails by {}; O(hosts) steps where rounds takes {}",
      m.hosts(), ranks / std::max(1, m.hosts()), r, m.rails_from.empty() ? "local index" : m.rails_from,
      2 * patterns::rounds(ranks)));
  if (r < all)
    plan.notes.push_back(fmt::format(
        "--max-rounds {}: {} of the {} rounds, {} of {} host pairs, each host against up to {} others: a sample for "
        "slow hosts, NICs and GPUs; a slow link is seen only if its two hosts meet",
        r, r, all, r * (m.hosts() / 2), m.hosts() * (m.hosts() - 1) / 2, r));
}

}  // namespace

BudgetPlan fit_budget(double budget_s, int cases, int hosts) {
  BudgetPlan b;
  b.budget_s = budget_s;
  b.cases = std::max(1, cases);
  b.start_s = kStartSPerHost * hosts + kStartSlackS;
  b.case_time_s = ((budget_s - b.start_s) / b.cases - kCaseOverheadS) / kOverrun;
  b.per_case_s = kCaseOverheadS + kOverrun * b.case_time_s;
  b.min_budget_s = b.start_s + b.cases * (kCaseOverheadS + kOverrun * kMinCaseTimeS);
  return b;
}

double BudgetPacer::next(double elapsed_s, std::size_t cases_left) {
  if (last_elapsed_ >= 0) {
    overhead_sum_ += std::max(0.0, elapsed_s - last_elapsed_ - last_case_time_);
    ++measured_;
  }
  const double overhead = measured_ ? overhead_sum_ / measured_ : kCaseOverheadS;
  const double left = budget_s_ - reserve_s_ - elapsed_s;
  const double t = (left / static_cast<double>(std::max<std::size_t>(1, cases_left)) - overhead) / kOverrun;
  last_elapsed_ = elapsed_s;
  last_case_time_ = std::clamp(t, kFloorCaseTimeS, planned_s_);  // behind: down to the fewest iterations (kMinAutoIters)
  return last_case_time_;
}

bool BudgetPacer::room(double elapsed_s) const {
  const double overhead = measured_ ? overhead_sum_ / measured_ : kCaseOverheadS;
  return budget_s_ - reserve_s_ - elapsed_s > overhead + kOverrun * kMinCaseTimeS;
}

std::vector<std::pair<std::string, std::string>> BudgetPacer::facts(double elapsed_s) const {
  const double total = elapsed_s + reserve_s_;
  return {{"budget.elapsed_s", fmt::format("{:.3f}", total)},
          {"budget.kept", total <= budget_s_ ? "yes" : "no"},
          {"budget.overhead_s", fmt::format("{:.3f}", measured_ ? overhead_sum_ / measured_ : kCaseOverheadS)}};
}

double budget_reserve_s(const patterns::Layout& at) {
  return kStartSPerHost * std::max(1, hosts_of(at)) + kStartSlackS;
}

std::string bound_nic(const Settings& settings, std::string* where) {
  // UCX reads UCX_NET_DEVICES itself (no gdrbench option owns it), so it is read as UCX does.
  std::vector<std::pair<std::string, std::string>> named;  // (device text, where it came from)
  if (const char* v = std::getenv("UCX_NET_DEVICES"); v && *v) named.emplace_back(v, "UCX_NET_DEVICES");
  for (const TransportInfo& t : transport_registry())
    if (t.bound_device)
      if (std::string dev = t.bound_device(settings); !dev.empty()) named.emplace_back(dev, t.name + " --hca");
  for (auto& [dev, from] : named) {
    if (dev.find(',') != std::string::npos || dev == "all") return "";  // several: no one rail
    if (where) *where = from;
    return dev.substr(0, dev.find(':'));
  }
  return "";
}

// Where no variable binds this rank to a NIC: the RDMA NIC local to its CPU binding (hwloc),
// as a launch that binds each rank near its GPU and NIC places it. "" when not exactly one.
static std::string nic_near_binding(std::string& where) {
  doctor::detail::Topology topo("");
  std::string why;
  std::string nic = topo.nic_near_binding(why);
  if (!nic.empty()) where = "hwloc: the RDMA NIC local to each rank's CPU binding";
  return nic;
}

// On GPU memory: the RDMA NIC nearest this rank's GPU in PCIe (hwloc), which is what a
// rail-aligned server pairs with it; a CPU binding only tells the socket's NICs apart.
static std::string nic_near_gpu(const RunOptions& opt, std::string& where) {
  if (std::find(opt.mems.begin(), opt.mems.end(), MemKind::cuda) == opt.mems.end()) return "";
  MemoryOps* ops = memory_ops(MemKind::cuda);
  if (!ops || !ops->unavailable_reason().empty()) return "";
  const std::string gpu = ops->device_bus_id();
  if (gpu.empty()) return "";
  doctor::detail::Topology topo("");
  std::string why;
  std::string nic = topo.nic_near_pci(gpu, why);
  if (!nic.empty()) where = "hwloc: the RDMA NIC nearest each rank's GPU in PCIe";
  return nic;
}

GatheredHosts gather_host_map(Bootstrap& boot, const RunOptions& opt) {
  std::vector<std::string> names, nics;
  for (int r = 0; r < boot.size(); ++r) names.push_back(boot.host_of(r));
  std::string where;
  std::string mine = bound_nic(opt.settings, &where);
  if (mine.empty() && uses(opt, "host-rounds")) mine = nic_near_gpu(opt, where);
  if (mine.empty() && uses(opt, "host-rounds")) mine = nic_near_binding(where);
  for (auto& blob : boot.allgather(std::as_bytes(std::span(mine.data(), mine.size()))))
    nics.emplace_back(reinterpret_cast<const char*>(blob.data()), blob.size());
  patterns::HostMap m = patterns::host_map(names, nics);
  m.rails_from = m.by_nic ? fmt::format("NIC ({}: {})", where.empty() ? "bound" : where,
                                         fmt::join(std::set<std::string>(nics.begin(), nics.end()), ","))
                 : std::count(nics.begin(), nics.end(), "") == static_cast<std::ptrdiff_t>(nics.size())
                     ? "local index (no rank is bound to one NIC: UCX_NET_DEVICES, --hca, nor has one RDMA "
                       "NIC nearest its GPU or local to its CPU binding)"
                     : "local index (the ranks' bound NICs are not one a rank and the same set on every host)";
  GatheredHosts out;
  out.problem = uses(opt, "host-rounds") ? patterns::host_rounds_problem(m) : "";
  out.map = std::make_shared<const patterns::HostMap>(std::move(m));
  return out;
}

// The cases of `plan` that run when only the first k rounds of rounds/host-rounds run: the same
// plan cut at round k (a round limit drops the later rounds' steps and changes no other case).
static int cases_within_rounds(const RunPlan& plan, int k) {
  return static_cast<int>(std::count_if(plan.cases.begin(), plan.cases.end(),
                                        [k](const Planned& c) { return round_of(c.params) < k; }));
}

// A budget too small for every round of `rounds` or `host-rounds`: the most rounds that fit
// (a sample, as --max-rounds N runs), by the same model (results/gdranalysis/schedule.py
// rounds_that_fit); 0 when not even one does, or --max-rounds is given. Counted on the plan
// of every round, cut at each count: no plan is made again.
static int rounds_that_fit(const RunOptions& opt, const RunPlan& plan, int retests) {
  const PlanInputs& in = plan.inputs;
  const bool by_host = uses(opt, "host-rounds"), by_rank = uses(opt, "rounds");
  if (opt.max_rounds > 0 || (!by_host && !by_rank)) return 0;
  const int ranks = in.layout.ranks, hosts = std::max(1, hosts_of(in.layout));
  const int all = std::min(by_host ? patterns::rounds(hosts) : ranks, by_rank ? patterns::rounds(ranks) : ranks);
  for (int k = all - 1; k >= 1; --k)
    if (fit_budget(opt.budget_s, cases_within_rounds(plan, k) + retests, hosts).case_time_s >= kMinCaseTimeS) return k;
  return 0;
}

namespace {

// With --budget: the case time (and the rounds) that fit, the plan laid out at them, and the
// budget's facts and notes; `problem` when even the fewest rounds do not fit.
Scheduled schedule_budget(const RunOptions& opt, const RunPlan& every) {
  PlanInputs in = every.inputs;
  const int cases = static_cast<int>(every.cases.size());
  const int hosts = std::max(1, hosts_of(in.layout));
  // The retests' share: rounds x 3 steps set aside beside the planned cases (src/planning/retest.h).
  const int retests = retest_reserve_cases(opt);
  BudgetPlan b = fit_budget(opt.budget_s, cases + retests, hosts);
  const double every_round_s = std::ceil(b.min_budget_s);
  const int sample = b.case_time_s < kMinCaseTimeS ? rounds_that_fit(opt, every, retests) : 0;
  if (sample > 0)  // a sample of rounds fits the model where every round does not: start with it
    b = fit_budget(opt.budget_s, cases_within_rounds(every, sample) + retests, hosts);
  Scheduled out;
  if (b.case_time_s < kMinCaseTimeS) {
    out.problem = fmt::format("--budget {:g} s is below the minimum {:.0f} s for {} cases on {} hosts ({:g} s of "
                              "timed work a case at least, {:g} s each beside it, {:.2g} s start-up)",
                              b.budget_s, std::ceil(b.min_budget_s), b.cases, hosts, kMinCaseTimeS, kCaseOverheadS,
                              b.start_s);
    return out;
  }
  in.case_time = std::floor(b.case_time_s * 1000) / 1000;
  out.plan = plan_run(opt, in);
  out.plan.budget_rounds = sample;
  out.plan.facts = {{"budget.s", fmt::format("{:g}", b.budget_s)},
                    {"budget.rounds", "calibrated: as many rounds as fit at each round's start"},
                    {"budget.cases", fmt::format("{}", b.cases)},
                    {"budget.case_time_s", fmt::format("{:.3f}", in.case_time)},
                    {"budget.per_case_s", fmt::format("{:.3f}", b.per_case_s)},
                    {"budget.start_s", fmt::format("{:.3f}", b.start_s)},
                    {"budget.min_s", fmt::format("{:.3f}", b.min_budget_s)},
                    {"budget.hosts", fmt::format("{}", hosts)},
                    {"budget.retest_cases", fmt::format("{}", retests)}};
  if (sample > 0) {
    out.plan.facts.emplace_back("budget.model_rounds", fmt::format("{}", sample));
    out.plan.notes.push_back(fmt::format(
        "--budget {:g} s: every round needs {:.0f} s by the model ({:g} s a case beside its timed work); its first "
        "{} rounds fit, so the run starts with them (as --max-rounds {}), then runs as many rounds as fit at what a "
        "case has cost so far, at each later round's start: a sample, not every pair, unless the fabric is faster",
        b.budget_s, every_round_s, kCaseOverheadS, sample, sample));
  }
  out.plan.notes.push_back(fmt::format(
      "--budget {:g} s: {} cases ({} of them set aside for the retests) of about {:.2f} s each ({:.3f} s of timed "
      "work, --case-time, + {:g} s), {:.1f} s start-up; the minimum for this plan is {:.0f} s",
      b.budget_s, b.cases, retests, b.per_case_s, in.case_time, kCaseOverheadS, b.start_s, std::ceil(b.min_budget_s)));
  return out;
}

// The schedule's facts and notes (patterns, --max-rounds, host-rounds) on the plan.
void record_schedule(const RunOptions& opt, RunPlan& plan) {
  const patterns::Layout& at = plan.inputs.layout;
  const int ranks = at.ranks;
  plan.facts.emplace_back("schedule.patterns", fmt::format("{}", fmt::join(opt.patterns, ",")));
  if (opt.max_rounds > 0) plan.facts.emplace_back("schedule.max_rounds", fmt::format("{}", opt.max_rounds));
  const int run = patterns::rounds_run(ranks, at.max_rounds), all = patterns::rounds(ranks);
  if (uses(opt, "rounds") && run < all)
    plan.notes.push_back(fmt::format("--max-rounds {}: rounds runs {} of its {} rounds over the ranks, each rank against "
                                     "up to {} others; a slow link is seen only if its two ranks meet",
                                     opt.max_rounds, run, all, run));
  if (uses(opt, "host-rounds") && at.hosts) host_rounds_record(plan);
}

}  // namespace

Scheduled schedule_run(const RunOptions& opt, int ranks, std::shared_ptr<const patterns::HostMap> hosts) {
  const PlanInputs in{patterns::Layout(ranks, opt.max_rounds, std::move(hosts)), opt.case_time};
  Scheduled out;
  out.plan = plan_run(opt, in);
  if (opt.budget_s > 0) {
    out = schedule_budget(opt, out.plan);
    if (!out.problem.empty()) return out;
  }
  record_schedule(opt, out.plan);
  return out;
}

RoundBudget::RoundBudget(const std::vector<Planned>& cases, int start_limit, int retests) : retests_(retests) {
  round_.reserve(cases.size());
  for (const Planned& p : cases) {
    round_.push_back(round_of(p.params));
    planned_ = std::max(planned_, round_.back() + 1);
  }
  limit_ = start_limit > 0 ? std::min(start_limit, planned_) : planned_;
  left_ = after_ = static_cast<std::size_t>(retests_) +
                   static_cast<std::size_t>(std::count_if(round_.begin(), round_.end(), [&](int r) { return r < limit_; }));
}

bool RoundBudget::deciding(std::size_t i) const {
  const int r = round_.at(i);
  return r >= 0 && r != last_round_ && (r == 0 || !stopped_);
}

bool RoundBudget::runs(std::size_t i, double left_s, double overhead_s) {
  const int r = round_.at(i);
  if (deciding(i) && overhead_s >= 0) decide(i, left_s, overhead_s);
  else left_ = after_;  // not a round's start, or no case measured yet: the limit stays
  if (r >= 0) last_round_ = r;
  const bool go = r < limit_;  // cases of other patterns (-1) always run
  if (go && r >= 0) most_run_ = std::max(most_run_, r + 1);
  after_ = go && left_ > 0 ? left_ - 1 : left_;
  return go;
}

// The most rounds whose cases from i on (with the retests' and every case of other patterns)
// fit left_s at overhead_s + the pacer's floor each (kFloorCaseTimeS: the fewest auto
// iterations, which is what the emulated cluster's cases ran at 20 Mbit/s anyway): a budget
// buys coverage first, and the cases share what is left up to the plan's case time. At least
// the rounds already run, and round 1 always. Counted by round: one pass a decision.
void RoundBudget::decide(std::size_t i, double left_s, double overhead_s) {
  const int r = round_[i];
  std::vector<std::size_t> at(static_cast<std::size_t>(planned_), 0);
  std::size_t need = static_cast<std::size_t>(retests_);
  for (std::size_t j = i; j < round_.size(); ++j) (round_[j] < 0 ? need : at[static_cast<std::size_t>(round_[j])])++;
  int best = std::max(1, r);
  for (int k = 0; k < best; ++k) need += at[static_cast<std::size_t>(k)];
  const double per_case = overhead_s + kOverrun * kFloorCaseTimeS;
  while (best < planned_ && static_cast<double>(need + at[static_cast<std::size_t>(best)]) * per_case <= left_s)
    need += at[static_cast<std::size_t>(best++)];
  stopped_ = best <= r;  // this stretch's rounds end here: none after a round skipped
  if (best != limit_)
    decisions_.push_back(fmt::format("round {}: {} of the {} rounds fit ({:.1f} s left, {:.3f} s a case beside its "
                                     "timed work so far)",
                                     r + 1, best, planned_, left_s, overhead_s));
  limit_ = best;
  left_ = need;
}

std::vector<std::pair<std::string, std::string>> rounds_run_facts(const RunOptions& opt, const patterns::Layout& at,
                                                                  int rounds) {
  std::vector<std::pair<std::string, std::string>> f{{"schedule.max_rounds", fmt::format("{}", rounds)},
                                                     {"budget.max_rounds", fmt::format("{}", rounds)}};
  if (uses(opt, "host-rounds"))
    for (auto& kv : host_rounds_run(at, rounds)) f.push_back(kv);
  return f;
}

}  // namespace gdr
