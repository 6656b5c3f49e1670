// What a run schedules and why: the host map of --pattern host-rounds and
// the --budget decision, printed at start and stored as facts (schedule.*,
// budget.*) so the verdict can be recomputed from the file alone. The
// schedule decides (the layout, the case time, the rounds a budget fits) and
// hands its decisions to plan_run (plan.h) as values: it calls the planner,
// never the other way, and it never rewrites the validated options.
//
// The budget model is `gdrbench validate`'s (results/gdranalysis/schedule.py
// holds the Python side; tests/mpi/test_host_rounds.py checks both give the
// same case time): a case costs its timed work x 1.15 (auto iterations
// overrun their time a little) plus 0.35 s (warm-up, check, HDF5); start-up
// costs 0.25 s per host plus 2 s.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memory>

#include "collectives/host_rounds.h"
#include "core/bootstrap.h"
#include "options/options.h"
#include "planning/plan.h"

namespace gdr {

inline constexpr double kCaseOverheadS = 0.35, kOverrun = 1.15, kStartSPerHost = 0.25, kStartSlackS = 2.0,
                        kMinCaseTimeS = 0.2;
// The least case time the pacer gives a case that runs late (the fewest auto iterations).
inline constexpr double kFloorCaseTimeS = 0.01;

struct BudgetPlan {
  double budget_s = 0, start_s = 0, case_time_s = 0, per_case_s = 0, min_budget_s = 0;
  int cases = 0;
};
// The case time that fits `cases` on `hosts` hosts into budget_s (pure).
BudgetPlan fit_budget(double budget_s, int cases, int hosts);

// Keeps a running sweep to --budget: before each case, the case time that
// fits the cases left into what is left of the budget (at most the plan's),
// given the seconds
// each case took beside its timed work so far (measured from the previous
// call; 0.35 s until a case has run). Every rank calls it with the same
// elapsed time (the slowest rank's), so all choose the same case time.
class BudgetPacer {
 public:
  // reserve_s: the budget's seconds outside the processes' clock (the
  // launcher's start before it, the exit after it): budget_reserve_s().
  // planned_s: the plan's case time, never exceeded: a case that ends early
  // leaves its time as margin for the last cases and the exit, not to the
  // cases after it (redistributed, a 4-host validate went past its budget).
  BudgetPacer(double budget_s, double reserve_s, double planned_s)
      : budget_s_(budget_s), reserve_s_(reserve_s), planned_s_(planned_s) {}
  // elapsed_s: seconds since the processes started; cases_left: this one included.
  double next(double elapsed_s, std::size_t cases_left);
  // What a case has cost beside its timed work so far (0.35 s until one has run).
  double overhead_s() const { return measured_ ? overhead_sum_ / measured_ : kCaseOverheadS; }
  bool measured() const { return measured_ > 0; }
  // The seconds of the budget left after elapsed_s (the launcher's share kept aside).
  double left_s(double elapsed_s) const { return budget_s_ - reserve_s_ - elapsed_s; }
  // Whether one more case of the least timed work fits what is left (the retests stop when not).
  bool room(double elapsed_s) const;
  // budget.elapsed_s, budget.kept, budget.overhead_s (the measured per-case cost) after the sweep.
  std::vector<std::pair<std::string, std::string>> facts(double elapsed_s) const;

 private:
  double budget_s_, reserve_s_, planned_s_, last_elapsed_ = -1, last_case_time_ = 0, overhead_sum_ = 0;
  int measured_ = 0;
};
// --budget over rounds / host-rounds, calibrated on the fabric: the plan holds every round
// (or --max-rounds'), and at each round's first case the rounds that still fit what is left,
// at the cost a case has measured so far beside its timed work and the pacer's floor of timed
// work (kFloorCaseTimeS, the fewest iterations), decide how many run: coverage first. The
// model's count (0.35 s a case, 0.2 s of timed work at least) is where it starts; a fast
// fabric runs every round, a slow one stops at a round's end, never within one. Every rank
// passes the same elapsed time, so all decide alike.
class RoundBudget {
 public:
  // start_limit: the rounds the model fits (0: all planned); retests: cases set aside after the sweep.
  RoundBudget(const std::vector<Planned>& cases, int start_limit, int retests);
  // Whether case i is a round's first, where runs() decides: only then does it read left_s.
  bool deciding(std::size_t i) const;
  // Before case i (in order): whether it runs. At a round's first case, decides the limit from
  // overhead_s, what a case has cost beside its timed work; < 0: none measured yet, it stays.
  bool runs(std::size_t i, double left_s, double overhead_s);
  // Cases from i on (i included) that run under the limit, with the retests: what --budget paces.
  std::size_t cases_left() const { return left_; }
  // After the run: the rounds run (the most of any stretch), of the planned.
  int rounds_run() const { return most_run_; }
  int rounds_planned() const { return planned_; }
  const std::vector<std::string>& decisions() const { return decisions_; }

 private:
  void decide(std::size_t i, double left_s, double overhead_s);

  std::vector<int> round_;  // per case: round_of, -1 for others
  int planned_ = 0, limit_ = 0, most_run_ = 0, last_round_ = -1, retests_ = 0;
  bool stopped_ = false;          // this stretch stopped at a round: the rest of it is skipped
  std::size_t left_ = 0, after_ = 0;  // cases left at this case, and at the next
  std::vector<std::string> decisions_;  // the limit's changes, for the run's notes
};

// The facts of the rounds a run ran (schedule.max_rounds, schedule.host_rounds.rounds,
// .host_pairs), for a calibrated budget that ran another count than planned.
std::vector<std::pair<std::string, std::string>> rounds_run_facts(const RunOptions& opt, const patterns::Layout& at,
                                                                  int rounds);

// The model's start-up for the layout's hosts (0.25 s a host + 2 s), reserved
// for the launch and exit: 1.5 s was too little for 8 ranks on 4 emulated
// hosts under load 16 (the run went 1-2 s past a 44 s budget).
double budget_reserve_s(const patterns::Layout& at);

// Collective (each rank's bound NIC is gathered): the host map the
// host-rounds pattern plans on, its rails by NIC where every rank names one
// (bound_nic, else under host-rounds the RDMA NIC nearest its GPU or local
// to its CPU binding, from hwloc) and every host has the same NICs, else by
// local index. `problem`: "" or the one line why host-rounds cannot run.
struct GatheredHosts {
  std::shared_ptr<const patterns::HostMap> map;
  std::string problem;
};
GatheredHosts gather_host_map(Bootstrap& boot, const RunOptions& opt);

// This rank's NIC as its launch binds it: UCX_NET_DEVICES naming one device
// ("mlx5_0:1", what a rail-aligned launch sets per rank for UCX and Open MPI's
// pml ucx), else a transport's own device setting (verbs' --hca, or its twin
// GDR_VERBS_HCA: the flag wins); the port is dropped. "" when none names
// exactly one device. `where` says which one it came from.
std::string bound_nic(const Settings& settings, std::string* where = nullptr);

// The run's plan as the schedule decides it: the layout over `ranks` ranks and the host map,
// --max-rounds, and with --budget the case time (and the rounds) that fit. `problem`: "" or
// the one line why the budget is too small. The plan carries the schedule's and the
// budget's notes and facts, and every decision (RunPlan::inputs, ::budget_rounds).
struct Scheduled {
  RunPlan plan;
  std::string problem;
};
Scheduled schedule_run(const RunOptions& opt, int ranks, std::shared_ptr<const patterns::HostMap> hosts);

}  // namespace gdr
