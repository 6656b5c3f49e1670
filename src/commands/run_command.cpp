// `gdrbench run`: validate, start MPI, open the result sinks, sweep, close.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <optional>
#include <span>
#include <thread>

#include "core/bootstrap.h"
#include "doctor/doctor.h"
#include "commands/commands.h"
#include "core/component_options.h"
#include "commands/version.h"
#include "core/errors.h"
#include "outputs/hdf5_sink.h"
#include "outputs/output_lock.h"
#include "outputs/output_path.h"
#include "outputs/crash_sealer.h"
#include "core/shell_quote.h"
#include "outputs/metadata.h"
#include "outputs/redaction.h"
#include "core/library_facts.h"
#include "sweep/runner.h"
#include "planning/schedule.h"
#include "core/signals.h"
#include "core/launcher.h"

extern char** environ;

namespace gdr {

int launcher_rank() { return launcher::rank(); }

void usage_error_line(const std::string& message) {
  if (launcher_rank() == 0) {
    // One line: control characters of a value given escaped (a newline must not make two).
    std::string line;
    for (unsigned char c : redact(message))
      line += c == '\n' ? std::string("\\n") : c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, char(c));
    fmt::print(stderr, "gdrbench: {}\n", line);
    return;
  }
  // The launcher ends the job at the first non-zero exit; give rank 0 time
  // to get its line out first, or the user may see nothing at all.
  std::this_thread::sleep_for(std::chrono::seconds(2));  // 500 ms lost the line under load
}

namespace {

std::string default_output(const Bootstrap& boot) {
  std::error_code ec;
  std::filesystem::create_directories("results", ec);
  return fmt::format("results/{}_{}_{}r.h5", utc_now(true), boot.host(), boot.size());
}

RunMetadata start_metadata(const Bootstrap& boot, int argc, char** argv) {
  RunMetadata m;
  m.command_line = join_command_line(argc, argv);
  m.version = gdr::kVersion;
  m.git_commit = gdr::kGitCommit;
  m.start_utc = utc_now();
  m.ranks = boot.size();
  m.hosts = boot.hosts();
  m.local_ranks = boot.local_ranks();
  EnvCapture env = capture_environment(environ);
  m.environment = std::move(env.vars);
  m.facts.emplace_back("environment.left_out", env.left_out);
  for (auto& kv : library_facts()) m.facts.push_back(kv);  // rank 0's node
  return m;
}

// Rank 0's hold on the output names (src/outputs/output_lock.h), from before the
// first check until finish() has closed the files.
struct OutputLocks {
  OutputLock output, json;
  SealWatch watch;  // closes the file if rank 0 dies first
};
std::unique_ptr<OutputLocks> g_locks;
// Disk kept free beside the HDF5 file for its closing writes (a few
// attributes and the link tables; 4 MiB holds those of 256 ranks).
constexpr std::size_t kCloseReserve = std::size_t(4) << 20;

// Free space the run needs before its first case: the lock's reserve, the
// first case's times (ranks x iterations x 8 B) and 64 KiB for the file's
// header, metadata and the case's attributes.
std::uint64_t first_case_need(const RunPlan& plan, int ranks) {
  const std::uint64_t iters = plan.cases.empty() ? 0 : static_cast<std::uint64_t>(plan.cases.front().params.iters);
  return kCloseReserve + iters * static_cast<std::uint64_t>(ranks) * 8 + (std::uint64_t(64) << 10);
}

// Rank 0's checks of both names and their locks, before any file is created
// (src/outputs/output_path.h, output_lock.h). Throws UsageError or RunError.
void check_and_lock(const RunOptions& opt, const std::string& output, std::uint64_t need) {
  // The names' kinds and folders first (nothing created yet); then both
  // files locked, by name and by identity, before the exists check and the
  // first file: a second run given any name of either (--force too) stops
  // there, touching nothing.
  if (!opt.json.empty() && same_file(opt.json, output))
    throw UsageError(fmt::format("--json {} and --output {} name the same file", shell_quote(opt.json),
                                 shell_quote(output)));
  for (auto [path, option] : {std::pair{&opt.json, "--json"}, {&output, "--output"}})
    if (!path->empty())
      if (std::string why = check_output_path(*path, true, option); !why.empty()) throw UsageError(why);
  if (std::string why = free_space_shortfall(output, "--output", need); !why.empty()) throw RunError(why);
  g_locks = std::make_unique<OutputLocks>();
  g_locks->output.acquire(output, "--output", kCloseReserve);
  if (!opt.json.empty()) g_locks->json.acquire(opt.json, "--json", 0);
  for (auto [path, option] : {std::pair{&opt.json, "--json"}, {&output, "--output"}})
    if (!path->empty())
      if (std::string why = check_output_path(*path, opt.force, option); !why.empty()) throw UsageError(why);
}

// Opens the sinks on rank 0; every rank learns whether that worked: "" or
// the line to print, and the exit status (2 bad input, 3 no space).
std::pair<std::string, int> open_sinks(Bootstrap& boot, const RunOptions& opt, const std::string& output,
                                       const RunPlan& plan, std::vector<std::unique_ptr<ResultSink>>& sinks) {
  std::string err;
  int code = 0;
  if (boot.rank() == 0) {
    try {
      check_and_lock(opt, output, first_case_need(plan, boot.size()));
      // The HDF5 sink last, so that it records a failure of the others (finish()).
      sinks.push_back(make_table_sink());
      if (!opt.json.empty()) sinks.push_back(make_jsonl_sink(opt.json, opt.force, opt.timeout));
      if (!opt.json.empty()) g_locks->json.hold_created(opt.json, "--json");
      sinks.push_back(make_hdf5_sink(output, opt.force, &g_locks->output));
      g_locks->output.hold_created(output, "--output");
      if (std::string why = g_locks->watch.start(output, g_locks->output.fd(), g_locks->output.file_fd()); !why.empty())
        fmt::print(stderr, "gdrbench: warning: no watcher for {} ({}): if rank 0 is killed the file stays "
                   "'running'\n", shell_quote(output), why);
    } catch (const std::exception& e) {
      err = e.what();
      code = dynamic_cast<const UsageError*>(&e) ? kExitUsage : kExitRuntime;
      sinks.clear();
      g_locks.reset();
    }
  }
  err = boot.broadcast(err);
  return {err, boot.allreduce_max(code)};
}

// A memory kind asked for but not usable here (no GPU, no driver): say why.
std::string unusable_memory(const RunOptions& opt) {
  for (MemKind m : opt.mems)
    if (std::string why = memory_ops(m)->unavailable_reason(); !why.empty())
      return fmt::format("-m {}: {}", mem_name(m), why);
  return {};
}

// The kinds asked for other than host memory, as -m names them.
std::string device_mems(const RunOptions& opt) {
  std::string out;
  for (MemKind m : opt.mems)
    if (m != MemKind::host) out += (out.empty() ? "" : ",") + std::string(mem_name(m));
  return out;
}

// `-T X -m <device kind> --path direct` (no staged path) where X cannot move
// that memory: every row of X would be skipped, so refuse with X's own
// reason. It comes before the device check, so a node without the device
// gives the same answer.
std::string direct_device_refusal(const RunOptions& opt) {
  if (opt.transports_defaulted || std::find(opt.paths.begin(), opt.paths.end(), Path::staged) != opt.paths.end())
    return {};
  for (const std::string& t : opt.transports) {
    const TransportInfo* info = find_transport(t);
    if (!info || !info->device_memory_reason) continue;
    for (MemKind m : opt.mems)
      if (m != MemKind::host)
        if (std::string why = info->device_memory_reason(m); !why.empty())
          return fmt::format("-T {} -m {} --path direct: {}", t, mem_name(m), why);
  }
  return {};
}

// Options given that no chosen test reads: said, never silently ignored
// (issue: --window with -t allreduce ran as if it were not there).
// Which tests read an option comes from their traits (collectives/test.h).
std::vector<std::string> ignored_options(const RunOptions& o) {
  using Reads = bool (*)(const TestTraits&);
  auto p2p = [](const TestTraits& t) { return t.point_to_point(); };
  auto windowed = [](const TestTraits& t) { return !t.window.empty(); };
  auto chunked = [](const TestTraits& t) { return !t.chunk.empty(); };
  auto typed = [](const TestTraits& t) { return !t.point_to_point(); };
  std::vector<std::string> out;
  auto note = [&](Reads reads, std::string what) {
    for (const std::string& t : o.tests)
      if (reads(find_test(t)->traits)) return;
    out.push_back(fmt::format("{} applies only to -t {}: ignored by this run's tests", what, test_names_where(reads)));
  };
  if (o.window != 64) note(windowed, fmt::format("--window {}", o.window));
  if (o.slots != 0) note(p2p, fmt::format("--slots {}", o.slots));
  if (o.pairs != Pairs::fixed) note(p2p, "--pairs");
  if (o.patterns != std::vector<std::string>{"pair"}) note(p2p, "--pattern");
  if (o.chunk_bytes != 0) note(chunked, fmt::format("--chunk {}", o.chunk_bytes));
  if (o.ops.size() != 1 || o.ops[0] != Op::sum) note(typed, "--op");
  return out;
}

// One line per node before the table when it is not ready for what the run asks.
void warn_if_not_ready(const std::vector<doctor::Report>& reports, const RunOptions& opt) {
  bool device_direct = !device_mems(opt).empty() &&
                       std::find(opt.paths.begin(), opt.paths.end(), Path::direct) != opt.paths.end();
  for (const auto& r : reports)
    for (const auto& t : opt.transports)
      if (std::string w = doctor::readiness_warning(r, device_direct, t); !w.empty())
        fmt::print(stderr, "gdrbench: warning: {}\n", w);
}

// Every rank checks that its buffers fit; rank 0 learns the first rank's
// complaint (collective).
std::string memory_check(Bootstrap& boot, const RunOptions& opt, const RunPlan& plan) {
  std::string why = memory_shortfall(opt, memory_need(opt, plan, boot.rank()), boot.local_size());
  auto all = boot.allgather(std::as_bytes(std::span(why.data(), why.size())));
  for (int r = 0; r < boot.size(); ++r)
    if (!all[r].empty())
      return fmt::format("{}: {}", boot.who(r),
                         std::string(reinterpret_cast<const char*>(all[r].data()), all[r].size()));
  return {};
}

// Closes every sink. A sink that fails to write or close (a full disk) turns
// a `complete` run into `failed` in the sinks after it (the HDF5 file is
// last); returns the first such failure, "" when all closed cleanly.
std::string finish(std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta,
                   const std::string& status, const std::string& error) {
  meta.status = status;
  meta.error = error;
  meta.end_utc = utc_now();
  std::string first;
  for (auto& s : sinks) {
    try {
      s->end(meta);
    } catch (const std::exception& e) {
      if (first.empty()) first = e.what();
      if (meta.status == "complete") {
        meta.status = "failed";
        meta.error = e.what();
      }
    }
  }
  sinks.clear();
  if (g_locks) g_locks->watch.closed();
  g_locks.reset();  // the files are closed: the names are free
  return first;
}

}  // namespace

namespace {
int run_started(Bootstrap& boot, const RunOptions& opt, int argc, char** argv, double bootstrap_s);
}  // namespace

int run_command(const RunArgs& args, int argc, char** argv) {
  RunOptions opt;
  try {
    opt = validate(args);  // the components' flags and environment variables too
  } catch (const UsageError& e) {
    usage_error_line(e.what());
    return kExitUsage;
  }
  const double t_init = now_seconds();
  Bootstrap boot(&argc, &argv, opt.timeout);
  const double bootstrap_s = now_seconds() - t_init;  // MPI_Init, ranks, hosts: what start-up costs at scale
  install_signal_handlers();
  // Start-up waits (the doctor's gather, the checks' allreduces) keep
  // --timeout like every other; a failure there ends the job in one line per
  // failing rank, before any file exists.
  try {
    return run_started(boot, opt, argc, argv, bootstrap_s);
  } catch (const InterruptedError& e) {
    fmt::print(stderr, "gdrbench: {}: {} during start-up; no result file yet\n", boot.me(), e.what());
    std::fflush(nullptr);
    std::_Exit(128 + interrupt_signal());
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.rfind("rank ", 0) != 0) what = fmt::format("{}: {}", boot.me(), what);
    boot.abort(fmt::format("{} (during start-up; no result file yet)", what), kExitRuntime);
  }
  return kExitRuntime;
}

namespace {

// Up to half a second for this rank's own interrupt (a signal) or a peer's
// notice of one; what it was, or nothing.
std::optional<InterruptedError> interrupt_after_failure(Bootstrap& boot) {
  for (Deadline d(0.5); !d.expired(); std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
    try {
      throw_if_interrupted();
      boot.check_peer_failure();
    } catch (const InterruptedError& e) {
      return e;
    } catch (const std::exception&) {
      return std::nullopt;  // another rank failed too: a failure
    }
  }
  return std::nullopt;
}

// A check before the sweep failed: its line on rank 0, and exit 2 (bad input) on every rank.
int refuse(Bootstrap& boot, const std::string& why) {
  if (boot.rank() == 0) fmt::print(stderr, "gdrbench: {}\n", why);
  return kExitUsage;
}

// The plan (decided by the schedule) and every check before the sweep, in order; 0, or the
// exit status of the first refusal. Collective.
int plan_and_check(Bootstrap& boot, const RunOptions& opt, RunPlan& plan) {
  try {
    validate_for_ranks(opt, boot.size());
  } catch (const UsageError& e) {
    return refuse(boot, e.what());
  }
  // Each component takes its own flags (--device, --stage-chunk, --hca, ...);
  // collective (a memory kind may ask whether ranks share its device).
  for (const ComponentOptions& c : component_options())
    if (c.apply) c.apply(opt.settings, boot);
  // Planned once, with the components' flags applied (a reference row asks
  // them whether it can run): the checks below and the sweep read this plan.
  GatheredHosts hosts = gather_host_map(boot, opt);
  if (!hosts.problem.empty()) return refuse(boot, hosts.problem);
  Scheduled scheduled = schedule_run(opt, boot.size(), hosts.map);
  if (!scheduled.problem.empty()) return refuse(boot, scheduled.problem);
  plan = std::move(scheduled.plan);
  if (std::string why = nothing_to_run(plan); !why.empty()) return refuse(boot, why);
  if (std::string why = direct_device_refusal(opt); boot.allreduce_max(why.empty() ? 0 : 1))
    return refuse(boot, why.empty() ? fmt::format("-m {} --path direct is refused on another rank", device_mems(opt))
                                    : why);
  if (std::string why = unusable_memory(opt); boot.allreduce_max(why.empty() ? 0 : 1))
    return refuse(boot, why.empty() ? fmt::format("-m {} is not usable on another rank", device_mems(opt)) : why);
  if (std::string why = memory_check(boot, opt, plan); !why.empty()) return refuse(boot, why);
  return 0;
}

// The run's facts before the first case: start-up cost, each node's doctor report, the plan's
// schedule, and the options no chosen test reads (said on rank 0, never silently ignored).
void record_start(Bootstrap& boot, const RunOptions& opt, const RunPlan& plan,
                  const std::vector<doctor::Report>& reports, double bootstrap_s, RunMetadata& meta) {
  meta.facts.emplace_back("scale.bootstrap_s", fmt::format("{:.6f}", boot.allreduce_max(bootstrap_s)));
  for (auto& kv : doctor::flatten(reports)) meta.facts.push_back(kv);
  for (auto& kv : plan.facts) meta.facts.push_back(kv);
  if (boot.rank() == 0) warn_if_not_ready(reports, opt);
  if (std::vector<std::string> ign = ignored_options(opt); !ign.empty()) {
    std::string all;
    for (const std::string& n : ign) {
      if (boot.rank() == 0) fmt::print(stderr, "gdrbench: note: {}\n", n);
      all += (all.empty() ? "" : "; ") + n;
    }
    meta.facts.emplace_back("run.ignored_options", all);
  }
}

int run_sweep_to_end(Bootstrap& boot, const RunOptions& opt, const RunPlan& plan, const std::string& output,
                     std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta);

int run_started(Bootstrap& boot, const RunOptions& opt, int argc, char** argv, double bootstrap_s) {
  RunPlan plan;
  if (int code = plan_and_check(boot, opt, plan)) return code;
  std::vector<doctor::Report> reports = doctor::gather(boot);
  std::string output = opt.output.empty() ? default_output(boot) : opt.output;
  output = boot.broadcast(output);  // one name, chosen by rank 0's clock
  std::vector<std::unique_ptr<ResultSink>> sinks;
  if (auto [err, code] = open_sinks(boot, opt, output, plan, sinks); !err.empty()) {
    if (boot.rank() == 0) fmt::print(stderr, "gdrbench: {}\n", err);
    return code;
  }
  RunMetadata meta = start_metadata(boot, argc, argv);
  record_start(boot, opt, plan, reports, bootstrap_s, meta);
  return run_sweep_to_end(boot, opt, plan, output, sinks, meta);
}

// An interrupt (^C, the launcher's signal, a peer's notice) during the sweep: rank 0 closes the
// file as `interrupted` and says where it is; the others tell rank 0 and go. Never returns.
[[noreturn]] void end_interrupted(Bootstrap& boot, const InterruptedError& e, const std::string& output,
                                  std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta) {
  const int sig = e.signal ? e.signal : interrupt_signal();
  if (boot.rank() != 0) {  // rank 0 holds the file: tell it, and stay while it closes it
    // The launcher stops every rank at once: rank 0's line says it for all.
    if (!interrupted_by_launcher()) fmt::print(stderr, "gdrbench: {}: {}\n", boot.me(), e.what());
    std::fflush(nullptr);
    boot.notify_interrupt(sig, e.what());
    std::_Exit(128 + sig);
  }
  finish(sinks, meta, "interrupted", e.what());
  fmt::print(stderr, "{}", redact(fmt::format("gdrbench: {}: {}; results so far kept in {}\n", boot.me(), e.what(), shell_quote(output))));
  std::fflush(nullptr);
  std::_Exit(128 + sig);
}

// A failure during the sweep. Other ranks may be blocked in a wait: record (rank 0 holds the
// file; others tell it), then end the whole job. Running out of memory is the user's size
// being too large for this machine: bad input, exit 2. Never returns.
[[noreturn]] void end_failed(Bootstrap& boot, const std::exception& e, const std::string& output,
                             std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta) {
  std::string what = e.what();
  int code = kExitRuntime;
  if (dynamic_cast<const std::bad_alloc*>(&e)) {
    what = fmt::format("{}: out of host memory (std::bad_alloc) while {}", boot.me(), activity());
    code = kExitUsage;
  } else if (dynamic_cast<const OutOfMemoryError*>(&e)) {
    if (what.rfind("rank ", 0) != 0) what = fmt::format("{}: {}", boot.me(), what);
    what += fmt::format(" while {}", activity());
    code = kExitUsage;
  }
  // Ctrl-C stops every rank at once, and a peer's connection reset can
  // reach this rank just before the launcher's signal or the peer's own
  // notice does: rank 0 gives them a moment before calling the run failed.
  if (boot.rank() == 0 && code == kExitRuntime) {
    if (std::optional<InterruptedError> late = interrupt_after_failure(boot)) {
      finish(sinks, meta, "interrupted", late->what());
      fmt::print(stderr, "gdrbench: {}: {} (then: {}); results so far kept in {}\n", boot.me(), late->what(),
                 what, shell_quote(output));
      std::fflush(nullptr);
      std::_Exit(128 + (late->signal ? late->signal : SIGTERM));
    }
  }
  finish(sinks, meta, "failed", what);
  boot.notify_failure(what);
  boot.abort(fmt::format("{}{}", what,
                         boot.rank() == 0 ? fmt::format("; results so far kept in {}", shell_quote(output)) : ""),
             code);
}

// The sweep, and how the run ends: the files closed as `complete`, `failed` or `interrupted`,
// and the exit status.
int run_sweep_to_end(Bootstrap& boot, const RunOptions& opt, const RunPlan& plan, const std::string& output,
                     std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta) {
  SweepTotals totals;
  try {
    for (auto& s : sinks) s->begin(meta);
    totals = run_sweep(boot, opt, plan, sinks, meta);
  } catch (const UsageError& e) {
    finish(sinks, meta, "failed", e.what());
    if (boot.rank() == 0) fmt::print(stderr, "gdrbench: {}\n", e.what());
    return kExitUsage;
  } catch (const InterruptedError& e) {
    end_interrupted(boot, e, output, sinks, meta);
  } catch (const std::exception& e) {
    end_failed(boot, e, output, sinks, meta);
  }
  // Every case skipped as it came (a defaulted transport not usable here):
  // nothing was measured, which is not a success.
  if (boot.allreduce_max(totals.cases) == 0) {
    const char* why = "no case ran: every case was skipped (the # notes above say why)";
    finish(sinks, meta, "failed", why);
    if (boot.rank() == 0) fmt::print(stderr, "gdrbench: {}\n", why);
    return kExitUsage;
  }
  if (std::string err = finish(sinks, meta, "complete", ""); !err.empty()) {
    fmt::print(stderr, "gdrbench: {}\n", err);  // rank 0 alone holds sinks
    return kExitRuntime;
  }
  if (boot.rank() == 0) {
    fmt::print("{}", redact(fmt::format("# results: {}{}\n", shell_quote(output), opt.json.empty() ? "" : " and " + shell_quote(opt.json))));
    if (totals.wrong)
      fmt::print(stderr, "gdrbench: {} wrong elements: results are NOT correct\n", totals.wrong);
  }
  return totals.wrong ? kExitWrongResults : 0;
}

}  // namespace

}  // namespace gdr
