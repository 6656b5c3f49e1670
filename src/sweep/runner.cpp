#include "sweep/runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "collectives/patterns.h"
#include "planning/schedule.h"
#include "collectives/timed_loop.h"
#include "sweep/case_wall_time.h"
#include "record/case_fields.h"
#include "core/errors.h"
#include "memory/memory_cache.h"
#include "core/mps.h"
#include "verdicts/live_verdicts.h"
#include "planning/retest.h"
#include "verdicts/path_record.h"
#include "verdicts/verdict.h"
#include "sweep/progress.h"
#include "sweep/rank_devices.h"
#include "core/signals.h"
#include "core/timer.h"

namespace gdr {
namespace {

// GDR_SELFTEST_FAIL_RANK=R: rank R fails as the second case starts (tests/mpi).
struct RunnerSettings {
  std::optional<int> selftest_fail_rank;
};
GDR_REGISTER_OPTIONS(reg_runner_options, declare_options<RunnerSettings>(ComponentOptions::Owner::program, "runner", {
    {{"", "GDR_SELFTEST_FAIL_RANK", "self-test: this rank fails as the second case starts"},
     setting::whole(&RunnerSettings::selftest_fail_rank, 0, 1'000'000)},
}));

// Static initialization: about when the process started, before MPI_Init
// (the scale.* facts measure from here; jobs/bench_scale.sh reads them).
const double kProcessStart = now_seconds();

// This rank's peak resident memory (VmHWM), KiB; 0 when unknown.
double peak_rss_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lf", &kib) == 1) break;
  std::fclose(f);
  return kib;
}

struct Lane {
  std::unique_ptr<Test> test;
  Transport* transport = nullptr;
  std::string dead;  // why this lane cannot run, once it failed to start
};


class Sweep {
 public:
  Sweep(Bootstrap& boot, const RunOptions& o, const RunPlan& plan, std::vector<std::unique_ptr<ResultSink>>& sinks,
        RunMetadata& meta)
      : boot_(boot), opt_(o), plan_(plan), sinks_(sinks), meta_(meta),
        peers_(needed_peers(o, plan.inputs.layout, boot.rank())), live_(o.settings) {}

  SweepTotals run() {
    const std::vector<Planned>& cases = plan_.cases;
    std::vector<std::string> notes = plan_.notes;
    notes.insert(notes.begin(), iterations_note(opt_));
    meta_.facts.emplace_back("timer", timer_description());
    note_shared_gpu(notes);
    for (auto& n : notes) for (auto& s : sinks_) s->note(n);
    Progress progress(boot_.rank() == 0 && isatty(STDERR_FILENO), cases.size());
    SweepTotals totals;
    // GDR_SELFTEST_FAIL_RANK=R: rank R fails as the second case starts, to
    // prove that the others stop at once and the file keeps the first case.
    const std::optional<int> fail_rank = opt_.settings.get<RunnerSettings>().selftest_fail_rank;
    const std::map<LaneKey, std::size_t> last = last_case(cases);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      throw_if_interrupted();
      if (fail_rank == boot_.rank() && i == 1)
        throw RunError(fmt::format("{}: self-test failure (GDR_SELFTEST_FAIL_RANK)", boot_.me()));
      const LaneKey& key = cases[i].key;
      if (in_budget(i)) {  // else a round that no longer fits --budget (src/planning/schedule.h RoundBudget)
        Lane& lane = lane_for(key);
        if (lane.dead.empty()) {
          run_planned(lane, i, totals, progress);
          progress.step(i + 1);
        }
      }
      // A lane's last case: its buffers go back to the cache, for the next
      // lanes (the other path, the next test; see memory_need). Every rank
      // follows the same plan, so all do it at the same case.
      if (last.at(key) == i) lanes_.erase(key);
    }
    progress.clear();
    run_retests(totals);
    finish_facts();
    return totals;
  }

 private:
  // Ranks sharing a GPU: whether under CUDA MPS (a fact), and if not, the verdict's line and a note.
  void note_shared_gpu(std::vector<std::string>& notes) {
    if (std::none_of(opt_.mems.begin(), opt_.mems.end(),
                     [](MemKind k) { return memory_ops(k) && memory_ops(k)->ranks_share_device(); }))
      return;
    // Every rank looks for the MPS daemon of its own node; any without is reported.
    std::string mps = mps_control_socket();
    bool without = boot_.allreduce_max(mps.empty() ? 1 : 0) > 0;
    meta_.facts.emplace_back("gpu.shared", without ? "yes, without CUDA MPS (no MPS control socket on some node)"
                                                   : "yes, under CUDA MPS (" + mps + ")");
    if (!without) return;
    shared_gpu_ = "ranks share a GPU WITHOUT CUDA MPS: device operations wait for context switches (~150 us "
                  "each on an H200), so device latency and small-message rows are far from the hardware; "
                  "start MPS (nvidia-cuda-mps-control -d) or give each rank its own GPU";
    notes.push_back(
        "ranks share a GPU and no CUDA MPS control daemon was found: the GPU time-slices between their "
        "processes, so a device operation may wait for a context switch (about 150 us on an H200), and with "
        "--check every each iteration's data check, though untimed, can slow the timed window after it (H200, "
        "bw at 1 MiB in one job: 100 GB/s checking every iteration, 155 without; no difference under MPS). "
        "Start MPS "
        "(nvidia-cuda-mps-control -d) or give each rank its own GPU");
  }

  // Planned case i on its lane: paced by --budget, run, handed to the sinks and rank 0's judges.
  void run_planned(Lane& lane, std::size_t i, SweepTotals& totals, Progress& progress) {
    if (totals.cases == 0)  // every rank: the lane's set-up was collective, so is this
      scale_fact("scale.first_case_start_s", boot_.allreduce_max(now_seconds() - kProcessStart));
    CaseParams params = plan_.cases[i].params;
    if (opt_.budget_s > 0)  // --budget: this case's share of what is left (src/planning/schedule.h)
      params.case_time = pacer_.next(boot_.allreduce_max(now_seconds() - kProcessStart), rounds_.cases_left());
    const double case_start = now_seconds();
    CaseRecord rec = run_case(lane, params);
    totals.cases++;
    totals.wrong += rec.wrong;
    progress.clear();
    for (auto& s : sinks_) s->add(rec);
    note_copy_row(rec, copies_);  // a ceiling for the rows after it (src/verdicts/path_record.h)
    if (boot_.rank() != 0) return;
    verdict_.add(rec);
    // after the step, outside its timed loop
    for (const LiveFinding& f : live_.add(rec, meta_.hosts)) report_live(f, sinks_);
    retest_.add(rec, i);
    note_case_cost(rec, case_start);
  }

  // After the last case: the budget's facts, the peak memory, and rank 0's verdict and summaries.
  void finish_facts() {
    if (opt_.budget_s > 0) {
      for (auto& kv : pacer_.facts(boot_.allreduce_max(now_seconds() - kProcessStart))) meta_.facts.push_back(kv);
      note_rounds_run();
    }
    scale_fact("scale.vmhwm_kib_max", boot_.allreduce_max(peak_rss_kib()));
    if (boot_.rank() != 0) return;
    for (auto& kv : case_cost_.facts()) meta_.facts.push_back(kv);
    meta_.verdict = verdict_.lines(meta_.facts, shared_gpu_);
    for (const LiveFinding& f : live_.finish()) report_live(f, sinks_);  // what a throttled group left
    if (std::string s = live_.summary(); !s.empty())
      for (auto& k : sinks_) k->note(s);
  }

  // The adaptive second phase (src/planning/retest.h): rank 0 plans each round and
  // broadcasts it (deadline: the bootstrap's), every rank runs its steps on
  // the lane of the group it retests, under what is left of --budget.
  void run_retests(SweepTotals& totals) {
    if (!retest_.on()) return;
    std::vector<std::string> lines, events;
    const bool go = boot_.rank() == 0 && retest_.start(lines);
    std::string why = fmt::format("no verdict within {} rounds", retest_.rounds());
    int left = retest_reserve_cases(opt_);
    std::optional<LaneKey> used;
    bool out_of_budget = false;
    for (int round = 1; !out_of_budget; ++round) {
      const std::string msg = boot_.broadcast(go ? retest_.next_round(round) : "");
      if (msg.empty()) break;
      const Retest::Steps steps = Retest::decode(msg);
      const Planned& tpl = plan_.cases.at(steps.plan_index);
      used = tpl.key;
      for (std::size_t k = 0; k < steps.flows.size(); ++k) {
        CaseParams p = tpl.params;
        p.pattern = "retest";
        p.step = (round - 1) * kRetestStepsPerRound + static_cast<int>(k);  // unique in the file
        p.flows = steps.flows[k];
        p.retest_round = round;
        if (opt_.budget_s > 0) {  // every rank sees the same elapsed time, so all stop at once
          const double elapsed = boot_.allreduce_max(now_seconds() - kProcessStart);
          if (!pacer_.room(elapsed)) {
            why = fmt::format("the budget ran out in round {}", round);
            out_of_budget = true;
            break;
          }
          p.case_time = pacer_.next(elapsed, static_cast<std::size_t>(std::max(1, left--)));
        }
        Lane& lane = lane_for(tpl.key);
        if (!lane.dead.empty()) throw RunError(fmt::format("retest: lane {} cannot run: {}", tpl.key.test, lane.dead));
        CaseRecord rec = run_case(lane, p);
        totals.cases++;
        totals.wrong += rec.wrong;
        if (boot_.rank() == 0) retest_.judge(rec, round, static_cast<int>(k));
        for (auto& s : sinks_) s->add(rec);
      }
      if (boot_.rank() == 0) retest_.end_round(round);
    }
    if (used) lanes_.erase(*used);
    if (boot_.rank() != 0) return;
    retest_.finish(why, lines, events, meta_.facts);
    for (auto& l : lines)  // the table prints each note as it comes
      for (auto& s : sinks_) s->note(l);
    for (auto& e : events)
      for (auto& s : sinks_) s->event(e);
  }

  // --budget: whether case i runs, the rounds re-decided at each round's start from what is
  // left and what a case has cost (every rank reads the same elapsed time, so all agree).
  bool in_budget(std::size_t i) {
    if (opt_.budget_s <= 0) return true;
    const double left = rounds_.deciding(i) ? pacer_.left_s(boot_.allreduce_max(now_seconds() - kProcessStart)) : 0;
    return rounds_.runs(i, left, pacer_.measured() ? pacer_.overhead_s() : -1);
  }

  // The rounds a calibrated budget ran, where not every planned one: the file's schedule says
  // those (suspects checks the cases against it), and the run says how it decided.
  void note_rounds_run() {
    if (rounds_.rounds_planned() == 0) return;
    const int run = rounds_.rounds_run(), planned = rounds_.rounds_planned();
    meta_.facts.emplace_back("budget.rounds_run", fmt::format("{}", run));
    if (run < planned)
      for (auto& kv : rounds_run_facts(opt_, plan_.inputs.layout, run)) meta_.facts.push_back(kv);
    if (boot_.rank() != 0 || (run == planned && plan_.budget_rounds == 0)) return;
    const std::string line = fmt::format("--budget: {} of the {} planned rounds ran{}{}", run, planned,
                                         rounds_.decisions().empty() ? "" : "; ",
                                         fmt::join(rounds_.decisions(), "; "));
    for (auto& s : sinks_) s->note(line);
  }

  Lane& lane_for(const LaneKey& key) {
    auto it = lanes_.find(key);
    if (it != lanes_.end()) return it->second;
    Lane& lane = lanes_[key];
    set_activity(fmt::format("setting up {} over {} ({} memory, {})", key.test, key.name,
                             mem_name(key.mem), path_name(key.path)));
    std::string err;
    int severity = 0;  // 1: this combination is unsupported, 2: the transport is unusable
    try {
      lane.transport = key.reference ? nullptr : transport(key);
      const TestInfo& ti = *find_test(key.test);
      lane.test = key.reference            ? find_reference(key.name, key.test)->create()
                  : !key.pattern.empty() ? ti.create_on_pattern(key.pattern, plan_.inputs.layout)
                                         : ti.create();
    } catch (const UnsupportedError& e) {
      err = e.what();
      severity = 1;
    } catch (const UsageError& e) {
      err = e.what();
      severity = 2;
    }
    // Every rank must agree before the collective prepare step.
    if (int worst = boot_.allreduce_max(severity); worst > 0) {
      if (err.empty()) err = "it failed on another rank";
      if (worst == 2 && (!opt_.transports_defaulted || key.reference)) throw UsageError(err);
      lane.dead = err;
      for (auto& s : sinks_) s->note(fmt::format("{}: skipped ({})", key.name, err));
      return lane;
    }
    TestEnv env{boot_, lane.transport, memory(key.mem), opt_.settings};
    lane.test->prepare(env, max_bytes());
    return lane;
  }

  Transport* transport(const LaneKey& key) {
    auto tkey = std::make_tuple(key.name, key.mem, key.path);
    auto it = transports_.find(tkey);
    if (it != transports_.end()) return it->second.get();
    auto t = make_transport(key.name, boot_, key.mem, key.path, opt_.settings);
    const double t0 = now_seconds();
    t->connect(peers_);
    const std::string what = fmt::format("{}.{}.{}", key.name, mem_name(key.mem), path_name(key.path));
    scale_fact("scale.connect_s." + what, boot_.allreduce_max(now_seconds() - t0));
    scale_fact("scale.peers_max." + what, boot_.allreduce_max(static_cast<int>(peers_.size())));
    const auto facts = t->describe();
    for (auto& [k, v] : facts) meta_.facts.emplace_back(k, v);
    note_rank_devices(boot_, rank_gpu(key.mem), t->device().label(), meta_);  // collective: /ranks/gpu, /ranks/hca
    for (auto& s : sinks_) s->update(meta_);  // on disk now: an interrupted run keeps them
    return (transports_[tkey] = std::move(t)).get();
  }

  std::size_t max_bytes() const { return opt_.sizes.back(); }

  void scale_fact(const std::string& k, double v) { meta_.facts.emplace_back(k, fmt::format("{:.6g}", v)); }

  // Lanes allocate through a cache, so the next lanes reuse what finished
  // lanes gave back (src/memory/memory_cache.h says why).
  MemoryOps& memory(MemKind kind) {
    auto& m = memory_[kind];
    if (!m) m = std::make_unique<CachedMemory>(*memory_ops(kind));
    return *m;
  }

  CaseRecord run_case(Lane& lane, const CaseParams& c) {
    set_activity(fmt::format("{} over {} ({} {}, {} {}, {} B{})", c.test, c.transport,
                             mem_name(c.mem), path_name(c.path),
                             dtype_label(c), op_label(c), c.bytes,
                             c.src >= 0 ? fmt::format(", rank {} -> {}", c.src, c.dst)
                             : c.pattern.empty() ? ""
                                                 : fmt::format(", pattern {} step {}", c.pattern, c.step)));
    TestEnv env{boot_, lane.transport, memory(c.mem), opt_.settings};
    const double t0 = now_seconds();
    CaseOutcome out = lane.test->run(env, c);
    const double t1 = now_seconds();
    // Under --iters auto the loops agreed on the count; the allreduce makes
    // sure, so that no rank's gather is out of step.
    CaseParams ran = c;
    ran.iters = boot_.allreduce_max(static_cast<int>(out.times.size()));
    out.times.resize(ran.iters, std::numeric_limits<double>::quiet_NaN());
    // One gather carries the times and, last, this rank's wrong and checked counts.
    out.times.push_back(static_cast<double>(out.wrong));
    out.times.push_back(static_cast<double>(out.checked));
    std::vector<double> all = boot_.gather_to_root(out.times);
    last_test_s_ = t1 - t0;
    last_gather_s_ = now_seconds() - t1;
    CaseRecord rec;
    rec.params = ran;
    rec.ranks = boot_.size();
    if (lane.transport) rec.transport_mode = lane.transport->mode(c.mem);
    if (boot_.rank() != 0) {
      record_path(boot_, lane.transport, rec, copies_);  // collective
      return rec;
    }
    const std::size_t row = ran.iters + 2;
    for (int r = 0; r < rec.ranks; ++r) {
      rec.times.insert(rec.times.end(), all.begin() + r * row, all.begin() + r * row + ran.iters);
      rec.wrong += static_cast<std::uint64_t>(all[r * row + ran.iters]);
      rec.checked_iters = std::max(rec.checked_iters, static_cast<std::uint64_t>(all[r * row + ran.iters + 1]));
    }
    const TestInfo& ti = *find_test(c.test);
    summarize_record(rec, ti.bytes_moved(ran), ti.bus_factor(rec.ranks));
    record_path(boot_, lane.transport, rec, copies_);
    return rec;
  }

  // Rank 0: where this case's wall time went (scale.case_s.*, src/sweep/case_wall_time.h).
  void note_case_cost(const CaseRecord& rec, double case_start) {
    double timed = 0;  // the longest timed loop of any rank (NaN where a rank sat out)
    const std::size_t iters = static_cast<std::size_t>(std::max(0, rec.params.iters));
    for (std::size_t r = 0; iters > 0 && (r + 1) * iters <= rec.times.size(); ++r) {
      double sum = 0;
      for (std::size_t k = r * iters; k < (r + 1) * iters; ++k)
        if (rec.times[k] == rec.times[k]) sum += rec.times[k];
      timed = std::max(timed, sum);
    }
    const double total = now_seconds() - case_start;
    case_cost_.add(last_test_s_, timed, last_gather_s_, total - last_test_s_ - last_gather_s_, total);
  }

  Bootstrap& boot_;
  const RunOptions& opt_;
  const RunPlan& plan_;
  std::vector<std::unique_ptr<ResultSink>>& sinks_;
  RunMetadata& meta_;
  std::vector<int> peers_;
  std::map<MemKind, std::unique_ptr<CachedMemory>> memory_;  // outlives the lanes
  std::map<LaneKey, Lane> lanes_;
  std::map<std::tuple<std::string, MemKind, Path>, std::unique_ptr<Transport>> transports_;
  CopyCeilings copies_;
  CaseCost case_cost_;  // rank 0's
  double last_test_s_ = 0, last_gather_s_ = 0;  // run_case's parts of the last case
  Verdict verdict_;
  LiveVerdicts live_;  // rank 0's (src/verdicts/live_verdicts.h)
  Retest retest_{opt_, plan_.inputs.layout};  // rank 0's plan of the second phase (src/planning/retest.h)
  std::string shared_gpu_;  // the verdict's line when ranks share a GPU without MPS
  BudgetPacer pacer_{opt_.budget_s, budget_reserve_s(plan_.inputs.layout), plan_.inputs.case_time};
  RoundBudget rounds_{plan_.cases, plan_.budget_rounds, retest_reserve_cases(opt_)};
};

}  // namespace

SweepTotals run_sweep(Bootstrap& boot, const RunOptions& opt, const RunPlan& plan,
                      std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta) {
  return Sweep(boot, opt, plan, sinks, meta).run();
}

}  // namespace gdr
