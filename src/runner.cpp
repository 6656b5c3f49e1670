#include "runner.h"

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
#include "schedule.h"
#include "collectives/timed_loop.h"
#include "case_cost.h"
#include "case_fields.h"
#include "core/errors.h"
#include "memory/memory_cache.h"
#include "core/mps.h"
#include "live_verdicts.h"
#include "retest.h"
#include "path_record.h"
#include "verdict.h"
#include "progress.h"
#include "rank_devices.h"
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

// The index of each lane's last case in the plan.
std::map<LaneKey, std::size_t> last_case(const std::vector<Planned>& cases) {
  std::map<LaneKey, std::size_t> last;
  for (std::size_t i = 0; i < cases.size(); ++i) last[cases[i].key] = i;
  return last;
}

std::vector<std::pair<int, int>> pairs_for(Pairs p, int n) {
  std::vector<std::pair<int, int>> out;
  if (p == Pairs::fixed) return {{0, n / 2}};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j && (p == Pairs::all || j == (i + 1) % n)) out.emplace_back(i, j);
  return out;
}

std::vector<int> needed_peers(const RunOptions& o, int n, int me) {
  std::set<int> peers;
  for (auto& name : o.tests) {
    const TestTraits& t = find_test(name)->traits;
    if (!t.point_to_point()) {
      if (n > 1) peers.insert({(me + 1) % n, (me + n - 1) % n});
      continue;
    }
    for (auto& p : o.patterns) {
      if (p != "pair") {
        for (int q : patterns::peers(p, t.directions, n, me)) peers.insert(q);
        continue;
      }
      for (auto [a, b] : pairs_for(o.pairs, n)) {
        if (a == me) peers.insert(b);
        if (b == me) peers.insert(a);
      }
    }
  }
  return {peers.begin(), peers.end()};
}

CaseParams base_params(const RunOptions& o, const TestInfo& ti, MemKind mem, Path path) {
  CaseParams c;
  c.test = ti.name;
  c.traits = ti.traits;
  c.mem = mem;
  c.path = path;
  c.iters = o.iters;
  c.warmup = o.warmup;
  c.iters_auto = o.iters == 0;
  c.case_time = o.case_time;
  c.check = o.check;
  c.window = o.window;
  c.slots = o.slots;
  c.chunk_bytes = o.chunk_bytes;
  return c;
}

// What one iteration is and how many run: the table's header and the file
// say it once, each case's `iters` gives its count.
std::string iterations_note(const RunOptions& o) {
  std::string n = o.iters > 0 ? fmt::format("{} timed iterations per case", o.iters)
                              : fmt::format("timed iterations per case: auto, OSU's counts (latency 10000 up to "
                                            "8 KiB, 1000 above; bw, bibw, copy rows 100, then 20; allreduce 1000, "
                                            "then 100) cut to about {:g} s of timed work at the warm-up's pace "
                                            "(--case-time), never fewer than {}",
                                            o.case_time, kMinAutoIters);
  n += o.warmup >= 0 ? fmt::format("; {} warm-up", o.warmup) : "; warm-up auto (OSU's skip counts)";
  bool p2p = std::any_of(o.tests.begin(), o.tests.end(), [](auto& t) { return find_test(t)->traits.point_to_point(); });
  // Said of every registered test of each shape (collectives/test.h's traits).
  auto round_trips = [](const TestTraits& t) { return t.kind == TestKind::latency; };
  auto windowed = [](const TestTraits& t) { return !t.window.empty(); };
  if (p2p)
    n += fmt::format("; {}: one iteration is one round trip (up to 64 back to back per barrier), {}: a window "
                     "of {} messages per iteration",
                     test_names_where(round_trips), test_names_where(windowed), o.window);
  return n;
}

bool has_pair(const RunOptions& o) {
  return std::find(o.patterns.begin(), o.patterns.end(), "pair") != o.patterns.end();
}

// The cases of a p2p test's concurrent patterns, one per step and transport
// (reference rows run one pair at a time only; a test without a pattern
// variant, one pair at a time too).
template <typename Note>
void plan_patterns(const RunOptions& o, const TestInfo& ti, int n, CaseParams c, std::vector<Planned>& out,
                   Note& note) {
  for (auto& p : o.patterns) {
    if (p == "pair") continue;
    if (!ti.create_on_pattern) {
      note(fmt::format("--pattern {}: {} runs one pair at a time only", p, ti.name));
      continue;
    }
    for (auto& r : o.references)
      if (find_reference(r, c.test))
        note(fmt::format("--pattern {}: reference '{}' runs with --pattern pair only", p, r));
    c.pattern = p;
    c.slots = o.slots;
    if (ti.complete) ti.complete(c, o.sizes.back(), n);
    for (int k = 0; k < patterns::steps(p, ti.traits.directions, n); ++k) {
      c.step = k;
      c.flows = patterns::flows(p, ti.traits.directions, n, k);
      for (auto& t : o.transports) {
        c.transport = t;
        out.push_back({{c.test, t, false, c.mem, c.path, p}, c});
      }
    }
  }
}

// Every case of the run, in the order it will execute, with skip notes.
std::vector<Planned> plan(const RunOptions& o, int n, std::vector<std::string>& notes) {
  std::vector<Planned> out;
  const bool pair = has_pair(o);
  std::set<std::string> noted;
  auto note = [&](std::string s) { if (noted.insert(s).second) notes.push_back(std::move(s)); };
  std::set<std::string> slots_capped;  // tests whose --slots N was cut (noted once, at the first size)
  for (auto& test : o.tests) {
    const TestInfo& ti = *find_test(test);
    const bool p2p = ti.traits.point_to_point();
    for (MemKind mem : o.mems) {
      std::vector<Path> paths = mem == MemKind::host ? std::vector<Path>{Path::direct} : o.paths;
      for (Path path : paths) {
        std::vector<std::pair<DType, Op>> kinds;
        if (p2p) kinds.emplace_back(DType::f32, Op::sum);
        else for (DType d : o.dtypes) for (Op op : o.ops) kinds.emplace_back(d, op);
        for (auto [dtype, op] : kinds)
          for (std::size_t bytes : o.sizes) {
            CaseParams c = base_params(o, ti, mem, path);
            c.has_dtype = !p2p;
            c.dtype = dtype;
            c.op = op;
            std::size_t unit = c.has_dtype ? dtype_size(dtype) : 1;
            c.count = bytes / unit;
            c.bytes = c.count * unit;
            if (ti.complete) ti.complete(c, o.sizes.back(), n);
            // --slots N is capped by the buffers and by the messages of a window or batch: say so once.
            if (o.slots > 0 && c.slots > 0 && c.slots < o.slots && slots_capped.insert(test).second)
              note(fmt::format("--slots {}: {} uses {} from {} B on (one per message of a window or batch at "
                               "most, as many as the buffers hold; each case's `slots` says how many)",
                               o.slots, test, c.slots, c.bytes));
            if (o.iters == 0 || o.warmup < 0) {
              IterCounts n = ti.auto_iters ? ti.auto_iters(c.bytes) : IterCounts{};
              if (o.iters == 0) c.iters = n.iters;
              if (o.warmup < 0) c.warmup = n.warmup;
            }
            if (c.count == 0) {
              note(fmt::format("{} B is smaller than one {}: size skipped", bytes, dtype_name(dtype)));
              continue;
            }
            // Say so when the row's size is not the one asked for.
            if (c.bytes != bytes)
              note(fmt::format("{} B is not a whole number of {} ({} B each): rounded down to {} B",
                               bytes, dtype_name(dtype), unit, c.bytes));
            auto pairs = p2p && pair ? pairs_for(o.pairs, n)
                         : p2p       ? std::vector<std::pair<int, int>>{}
                                     : std::vector<std::pair<int, int>>{{-1, -1}};
            if (p2p) plan_patterns(o, ti, n, c, out, note);
            for (auto [src, dst] : pairs) {
              c.src = src;
              c.dst = dst;
              // Ceiling rows (copy-*) go first, so the rows they bound can use them.
              std::size_t first = out.size();
              for (auto& t : o.transports) {
                c.transport = t;
                c.reference = false;
                out.push_back({{test, t, false, mem, path}, c});
              }
              for (auto& rname : o.references) {
                const ReferenceInfo* ref = find_reference(rname, test);
                if (!ref) {
                  note(fmt::format("reference '{}' applies to {} only: skipped for {}", rname,
                                   reference_tests(rname), test));
                  continue;
                }
                CaseParams r = c;  // the row's own copy: c stays as our tests' rows want it
                r.transport = rname;
                r.reference = true;
                // Point-to-point reference rows (NCCL send/recv, copies) time
                // a library or a copy engine and verify no data; the
                // libraries' own collectives choose their own chunks.
                r.traits.checks_data = !p2p;
                r.traits.chunk = {};
                if (!r.traits.checks_data) r.check = CheckMode::none;
                if (std::string why = ref->cannot_run(r); !why.empty()) {
                  std::string what = c.has_dtype ? fmt::format("{} {} {}", mem_name(mem), dtype_name(dtype), op_name(op))
                                                 : fmt::format("{} {}", test, mem_name(mem));
                  note(fmt::format("reference '{}' skipped for {}: {}", rname, what, why));
                  continue;
                }
                if (!ref->bounds.empty()) note(fmt::format("reference '{}': {}", rname, ref->bounds));
                if (ref->bounds.empty()) out.push_back({{test, rname, true, mem, path}, r});
                else out.insert(out.begin() + static_cast<std::ptrdiff_t>(first++), {{test, rname, true, mem, path}, r});
              }
            }
          }
      }
    }
  }
  return out;
}

class Sweep {
 public:
  Sweep(Bootstrap& boot, const RunOptions& o, const RunPlan& plan, std::vector<std::unique_ptr<ResultSink>>& sinks,
        RunMetadata& meta)
      : boot_(boot), opt_(o), plan_(plan), sinks_(sinks), meta_(meta),
        peers_(needed_peers(o, boot.size(), boot.rank())), live_(o.settings) {}

  SweepTotals run() {
    const std::vector<Planned>& cases = plan_.cases;
    std::vector<std::string> notes = plan_.notes;
    notes.insert(notes.begin(), iterations_note(opt_));
    meta_.facts.emplace_back("timer", timer_description());
    if (std::any_of(opt_.mems.begin(), opt_.mems.end(),
                    [](MemKind k) { return memory_ops(k) && memory_ops(k)->ranks_share_device(); })) {
      // Every rank looks for the MPS daemon of its own node; any without is reported.
      std::string mps = mps_control_socket();
      bool without = boot_.allreduce_max(mps.empty() ? 1 : 0) > 0;
      meta_.facts.emplace_back("gpu.shared", without ? "yes, without CUDA MPS (no MPS control socket on some node)"
                                                     : "yes, under CUDA MPS (" + mps + ")");
      if (without) {
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
    }
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
      if (!in_budget(i)) {  // a round that no longer fits --budget (src/schedule.h RoundBudget)
        if (last.at(key) == i) lanes_.erase(key);
        continue;
      }
      Lane& lane = lane_for(key);
      if (lane.dead.empty()) {
        if (totals.cases == 0)  // every rank: the lane's set-up was collective, so is this
          scale_fact("scale.first_case_start_s", boot_.allreduce_max(now_seconds() - kProcessStart));
        CaseParams params = cases[i].params;
        if (opt_.budget_s > 0)  // --budget: this case's share of what is left (src/schedule.h)
          params.case_time = pacer_.next(boot_.allreduce_max(now_seconds() - kProcessStart), rounds_.cases_left());
        const double case_start = now_seconds();
        CaseRecord rec = run_case(lane, params);
        totals.cases++;
        totals.wrong += rec.wrong;
        progress.clear();
        for (auto& s : sinks_) s->add(rec);
        note_copy_row(rec, copies_);  // a ceiling for the rows after it (src/path_record.h)
        if (boot_.rank() == 0) {
          verdict_.add(rec);
          // after the step, outside its timed loop
          for (const LiveFinding& f : live_.add(rec, meta_.hosts)) report_live(f, sinks_);
          retest_.add(rec, i);
          note_case_cost(rec, case_start);
        }
        progress.step(i + 1);
      }
      // A lane's last case: its buffers go back to the cache, for the next
      // lanes (the other path, the next test; see memory_need). Every rank
      // follows the same plan, so all do it at the same case.
      if (last.at(key) == i) lanes_.erase(key);
    }
    progress.clear();
    run_retests(totals);
    if (opt_.budget_s > 0) {
      for (auto& kv : pacer_.facts(boot_.allreduce_max(now_seconds() - kProcessStart))) meta_.facts.push_back(kv);
      note_rounds_run();
    }
    scale_fact("scale.vmhwm_kib_max", boot_.allreduce_max(peak_rss_kib()));
    if (boot_.rank() == 0) {
      for (auto& kv : case_cost_.facts()) meta_.facts.push_back(kv);
      meta_.verdict = verdict_.lines(meta_.facts, shared_gpu_);
      for (const LiveFinding& f : live_.finish()) report_live(f, sinks_);  // what a throttled group left
      if (std::string s = live_.summary(); !s.empty())
        for (auto& k : sinks_) k->note(s);
    }
    return totals;
  }

 private:
  // The adaptive second phase (src/retest.h): rank 0 plans each round and
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
      for (auto& kv : rounds_run_facts(opt_, run)) meta_.facts.push_back(kv);
    if (boot_.rank() != 0 || (run == planned && opt_.budget_rounds == 0)) return;
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
                  : !key.pattern.empty() ? ti.create_on_pattern(key.pattern, boot_.size())
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

  // Rank 0: where this case's wall time went (scale.case_s.*, src/case_cost.h).
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
  LiveVerdicts live_;  // rank 0's (src/live_verdicts.h)
  Retest retest_{opt_, boot_.size()};  // rank 0's plan of the second phase (src/retest.h)
  std::string shared_gpu_;  // the verdict's line when ranks share a GPU without MPS
  BudgetPacer pacer_{opt_.budget_s, budget_reserve_s(), opt_.case_time};
  RoundBudget rounds_{plan_.cases, opt_.budget_rounds, retest_reserve_cases(opt_)};
};

}  // namespace

RunPlan plan_run(const RunOptions& opt, int ranks) {
  RunPlan p;
  p.cases = plan(opt, ranks, p.notes);
  order_rounds_first(p.cases);
  return p;
}

MemoryNeed memory_need(const RunOptions& opt, const RunPlan& plan, int ranks, int rank) {
  const std::vector<Planned>& cases = plan.cases;
  const std::map<LaneKey, std::size_t> last = last_case(cases);
  const std::size_t max = opt.sizes.back();
  // Replays Sweep::run: a lane takes its buffers through the cache at its
  // first case and gives them back after its last; pinned host memory is
  // held beside, not cached. The need is the most held at once.
  std::map<MemKind, CacheModel> model;
  std::map<LaneKey, std::pair<Footprint, std::vector<std::size_t>>> live;
  std::set<std::tuple<std::string, MemKind, Path>> staged;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const LaneKey& k = cases[i].key;
    if (!live.count(k)) {
      Footprint f{{max, max, 64}, 0};  // unless declared: send, recv, ack
      if (k.reference) {
        if (const auto& hook = find_reference(k.name, k.test)->footprint) f = hook(max, ranks);
      } else if (const auto& hook = find_test(k.test)->footprint) {
        f = hook(FootprintArgs{find_test(k.test)->traits, max, ranks, rank, k.pattern});
      }
      std::vector<std::size_t> held = model[k.mem].take(f.buffers);
      model[MemKind::host].hold(f.host);
      live[k] = {f, held};
      if (!k.reference && k.path == Path::staged) staged.emplace(k.name, k.mem, k.path);
    }
    if (last.at(k) == i) {
      auto& [f, held] = live[k];
      model[k.mem].give(held);
      model[MemKind::host].drop(f.host);
    }
  }
  MemoryNeed need;
  for (auto& [kind, m] : model) need.bytes[kind] = m.peak();
  // One pinned pool per staged transport, as large as the staging layer says.
  if (!staged.empty() && staging_host_bytes())
    need.bytes[MemKind::host] += staged.size() * staging_host_bytes()(needed_peers(opt, ranks, rank).size(), opt.settings);
  return need;
}

std::string nothing_to_run(const RunPlan& plan) {
  if (!plan.cases.empty()) return {};
  std::string why;
  for (const std::string& n : plan.notes) why += (why.empty() ? "" : "; ") + n;
  return "no case to run: " + (why.empty() ? std::string("the sweep is empty") : why);
}

SweepTotals run_sweep(Bootstrap& boot, const RunOptions& opt, const RunPlan& plan,
                      std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta) {
  return Sweep(boot, opt, plan, sinks, meta).run();
}

}  // namespace gdr
