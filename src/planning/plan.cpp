// Planning the sweep (plan.h): every case of the run in the order it will execute, and what
// the sweep and the checks before it read of the plan.
#include "planning/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "collectives/patterns.h"
#include "collectives/timed_loop.h"
#include "core/errors.h"
#include "memory/memory_cache.h"

namespace gdr {

// The index of each lane's last case in the plan.
std::map<LaneKey, std::size_t> last_case(const std::vector<Planned>& cases) {
  std::map<LaneKey, std::size_t> last;
  for (std::size_t i = 0; i < cases.size(); ++i) last[cases[i].key] = i;
  return last;
}

namespace {

std::vector<std::pair<int, int>> pairs_for(Pairs p, int n) {
  std::vector<std::pair<int, int>> out;
  if (p == Pairs::fixed) return {{0, n / 2}};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j && (p == Pairs::all || j == (i + 1) % n)) out.emplace_back(i, j);
  return out;
}

}  // namespace

std::vector<int> needed_peers(const RunOptions& o, const patterns::Layout& at, int me) {
  const int n = at.ranks;
  std::set<int> peers;
  for (auto& name : o.tests) {
    const TestTraits& t = find_test(name)->traits;
    if (!t.point_to_point()) {
      if (n > 1) peers.insert({(me + 1) % n, (me + n - 1) % n});
      continue;
    }
    for (auto& p : o.patterns) {
      if (p != "pair") {
        for (int q : patterns::peers(p, t.directions, at, me)) peers.insert(q);
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

namespace {

CaseParams base_params(const RunOptions& o, const PlanInputs& in, const TestInfo& ti, MemKind mem, Path path) {
  CaseParams c;
  c.test = ti.name;
  c.traits = ti.traits;
  c.mem = mem;
  c.path = path;
  c.iters = o.iters;
  c.warmup = o.warmup;
  c.iters_auto = o.iters == 0;
  c.case_time = in.case_time;
  c.check = o.check;
  c.window = o.window;
  c.slots = o.slots;
  c.chunk_bytes = o.chunk_bytes;
  return c;
}

}  // namespace

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

namespace {

bool has_pair(const RunOptions& o) {
  return std::find(o.patterns.begin(), o.patterns.end(), "pair") != o.patterns.end();
}

// The cases of a p2p test's concurrent patterns, one per step and transport
// (reference rows run one pair at a time only; a test without a pattern
// variant, one pair at a time too).
template <typename Note>
void plan_patterns(const RunOptions& o, const TestInfo& ti, const patterns::Layout& at, CaseParams c,
                   std::vector<Planned>& out, const Note& note) {
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
    if (ti.complete) ti.complete(c, o.sizes.back(), at.ranks);
    for (int k = 0; k < patterns::steps(p, ti.traits.directions, at); ++k) {
      c.step = k;
      c.flows = patterns::flows(p, ti.traits.directions, at, k);
      for (auto& t : o.transports) {
        c.transport = t;
        out.push_back({{c.test, t, false, c.mem, c.path, p}, c});
      }
    }
  }
}

// The default copy rows' bounds (Planner::default_copies): timed seconds a case, bytes a window.
constexpr double kCopyCaseTime = 0.2;
constexpr std::size_t kCopyWindowBytes = std::size_t{1} << 30;

// Lays out every case of the run, in the order it will execute, with skip notes (each once).
class Planner {
 public:
  Planner(const RunOptions& o, const PlanInputs& in, std::vector<std::string>& notes) : o_(o), in_(in), notes_(notes) {}

  std::vector<Planned> all() {
    for (auto& test : o_.tests) {
      const TestInfo& ti = *find_test(test);
      const bool p2p = ti.traits.point_to_point();
      for (MemKind mem : o_.mems) {
        if (p2p && ti.traits.kind == TestKind::bandwidth) default_copies(mem);
        std::vector<Path> paths = mem == MemKind::host ? std::vector<Path>{Path::direct} : o_.paths;
        for (Path path : paths) {
          std::vector<std::pair<DType, Op>> kinds;
          if (p2p) kinds.emplace_back(DType::f32, Op::sum);
          else for (DType d : o_.dtypes) for (Op op : o_.ops) kinds.emplace_back(d, op);
          for (auto [dtype, op] : kinds)
            for (std::size_t bytes : o_.sizes) size(ti, mem, path, dtype, op, bytes);
        }
      }
    }
    return std::move(out_);
  }

 private:
  void note(std::string s) {
    if (noted_.insert(s).second) notes_.push_back(std::move(s));
  }

  // No --reference given: the copy rows the verdicts of device bw/bibw rows need, once a run, at
  // every size, before the first such rows. copy-d2d bounds a direct transfer between ranks of
  // one GPU (its %peak), copy-d2h and copy-h2d the staged path and any bytes over the PCIe link,
  // and the slower of the two is what a row's speed must beat for its path to be called direct
  // when the transport cannot say (src/verdicts/path_record.cpp). Copies move no data through a
  // transport, so they run once, on the direct path, whatever --path says. They are kept cheap:
  // at most kCopyCaseTime of timed work and windows of at most kCopyWindowBytes.
  void default_copies(MemKind mem) {
    if (!o_.references_defaulted || mem != MemKind::cuda || !copied_.insert(mem).second) return;
    const TestInfo& bw = *find_test("bw");
    const int n = in_.layout.ranks;
    std::vector<std::string> names;
    for (const char* name : {"copy-d2d", "copy-d2h", "copy-h2d"}) {
      if (!find_reference(name, "bw")) continue;  // built without CUDA: -m cuda is refused before
      names.push_back(name);
      for (std::size_t bytes : o_.sizes) {
        CaseParams r = base_params(o_, in_, bw, mem, Path::direct);
        r.count = r.bytes = bytes;
        r.dtype = DType::f32;  // as the p2p rows: one stretch with them (order_rounds_first)
        r.op = Op::sum;
        r.src = 0;
        r.dst = n / 2;
        if (bw.complete) bw.complete(r, o_.sizes.back(), n);
        if (o_.iters == 0 || o_.warmup < 0) {
          IterCounts counts = bw.auto_iters ? bw.auto_iters(bytes) : IterCounts{};
          if (o_.iters == 0) r.iters = counts.iters;
          if (o_.warmup < 0) r.warmup = counts.warmup;
        }
        r.case_time = std::min(r.case_time, kCopyCaseTime);
        r.window = static_cast<int>(std::clamp<std::size_t>(kCopyWindowBytes / std::max<std::size_t>(bytes, 1), 1,
                                                            static_cast<std::size_t>(o_.window)));
        r.transport = name;
        r.reference = true;
        r.traits.checks_data = false;
        r.traits.chunk = {};
        r.check = CheckMode::none;
        out_.push_back({{bw.name, name, true, mem, Path::direct}, r});
      }
    }
    if (!names.empty())
      note(fmt::format("no --reference: the copy rows {} run at each size before the {} bw/bibw rows, whose "
                       "%peak and path-by-speed verdict need them ({:g} s of timed work at most, windows of "
                       "{} MiB at most); --reference none leaves them out",
                       fmt::join(names, ", "), mem_name(mem), kCopyCaseTime, kCopyWindowBytes >> 20));
  }

  // One size of one (test, memory, path, dtype, op): its parameters, then its rows.
  void size(const TestInfo& ti, MemKind mem, Path path, DType dtype, Op op, std::size_t bytes) {
    const int n = in_.layout.ranks;
    const bool p2p = ti.traits.point_to_point();
    CaseParams c = base_params(o_, in_, ti, mem, path);
    c.has_dtype = !p2p;
    c.dtype = dtype;
    c.op = op;
    std::size_t unit = c.has_dtype ? dtype_size(dtype) : 1;
    c.count = bytes / unit;
    c.bytes = c.count * unit;
    if (ti.complete) ti.complete(c, o_.sizes.back(), n);
    // --slots N is capped by the buffers and by the messages of a window or batch: say so once.
    if (o_.slots > 0 && c.slots > 0 && c.slots < o_.slots && slots_capped_.insert(ti.name).second)
      note(fmt::format("--slots {}: {} uses {} from {} B on (one per message of a window or batch at "
                       "most, as many as the buffers hold; each case's `slots` says how many)",
                       o_.slots, ti.name, c.slots, c.bytes));
    if (o_.iters == 0 || o_.warmup < 0) {
      IterCounts counts = ti.auto_iters ? ti.auto_iters(c.bytes) : IterCounts{};
      if (o_.iters == 0) c.iters = counts.iters;
      if (o_.warmup < 0) c.warmup = counts.warmup;
    }
    if (c.count == 0) {
      note(fmt::format("{} B is smaller than one {}: size skipped", bytes, dtype_name(dtype)));
      return;
    }
    // Say so when the row's size is not the one asked for.
    if (c.bytes != bytes)
      note(fmt::format("{} B is not a whole number of {} ({} B each): rounded down to {} B",
                       bytes, dtype_name(dtype), unit, c.bytes));
    auto pairs = p2p && has_pair(o_) ? pairs_for(o_.pairs, n)
                 : p2p               ? std::vector<std::pair<int, int>>{}
                                     : std::vector<std::pair<int, int>>{{-1, -1}};
    if (p2p) plan_patterns(o_, ti, in_.layout, c, out_, [this](std::string s) { note(std::move(s)); });
    for (auto [src, dst] : pairs) {
      c.src = src;
      c.dst = dst;
      // Ceiling rows (copy-*) go first, so the rows they bound can use them.
      std::size_t first = out_.size();
      for (auto& t : o_.transports) {
        c.transport = t;
        c.reference = false;
        out_.push_back({{ti.name, t, false, mem, path}, c});
      }
      for (auto& rname : o_.references) references(rname, c, first);
    }
  }

  // The reference row `rname` beside our rows of case c (ceiling rows before them, at `first`).
  void references(const std::string& rname, const CaseParams& c, std::size_t& first) {
    const ReferenceInfo* ref = find_reference(rname, c.test);
    if (!ref) {
      note(fmt::format("reference '{}' applies to {} only: skipped for {}", rname, reference_tests(rname), c.test));
      return;
    }
    const bool p2p = c.traits.point_to_point();
    CaseParams r = c;  // the row's own copy: c stays as our tests' rows want it
    r.transport = rname;
    r.reference = true;
    // Point-to-point reference rows (NCCL send/recv, copies) time a library or a copy engine and
    // verify no data; the libraries' own collectives choose their own chunks.
    r.traits.checks_data = !p2p;
    r.traits.chunk = {};
    if (!r.traits.checks_data) r.check = CheckMode::none;
    if (std::string why = ref->cannot_run(r); !why.empty()) {
      std::string what = c.has_dtype ? fmt::format("{} {} {}", mem_name(c.mem), dtype_name(c.dtype), op_name(c.op))
                                     : fmt::format("{} {}", c.test, mem_name(c.mem));
      note(fmt::format("reference '{}' skipped for {}: {}", rname, what, why));
      return;
    }
    const Planned row{{c.test, rname, true, c.mem, c.path}, r};
    if (!ref->bounds.empty()) note(fmt::format("reference '{}': {}", rname, ref->bounds));
    if (ref->bounds.empty()) out_.push_back(row);
    else out_.insert(out_.begin() + static_cast<std::ptrdiff_t>(first++), row);
  }

  const RunOptions& o_;
  const PlanInputs& in_;
  std::vector<std::string>& notes_;
  std::vector<Planned> out_;
  std::set<std::string> noted_;
  std::set<MemKind> copied_;  // memory kinds whose default copy rows are planned
  std::set<std::string> slots_capped_;  // tests whose --slots N was cut (noted once, at the first size)
};

}  // namespace

RunPlan plan_run(const RunOptions& opt, const PlanInputs& in) {
  RunPlan p;
  p.inputs = in;
  p.cases = Planner(opt, in, p.notes).all();
  order_rounds_first(p.cases);
  return p;
}

int round_of(const CaseParams& c) {
  if (c.step < 0 || (c.pattern != "rounds" && c.pattern != "host-rounds")) return -1;
  return c.traits.directions == 2 ? c.step : c.step / 2;
}

void order_rounds_first(std::vector<Planned>& cases) {
  auto same = [](const Planned& a, const Planned& b) {
    return a.key.test == b.key.test && a.key.mem == b.key.mem && a.key.path == b.key.path &&
           a.params.dtype == b.params.dtype && a.params.op == b.params.op;
  };
  for (auto first = cases.begin(); first != cases.end();) {
    auto last = std::find_if(first, cases.end(), [&](const Planned& p) { return !same(*first, p); });
    std::stable_sort(first, last, [](const Planned& a, const Planned& b) { return round_of(a.params) < round_of(b.params); });
    first = last;
  }
}

MemoryNeed memory_need(const RunOptions& opt, const RunPlan& plan, int rank) {
  const int ranks = plan.inputs.layout.ranks;
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
        f = hook(FootprintArgs{find_test(k.test)->traits, max, ranks, rank, k.pattern, plan.inputs.layout});
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
    need.bytes[MemKind::host] += staged.size() * staging_host_bytes()(needed_peers(opt, plan.inputs.layout, rank).size(), opt.settings);
  return need;
}

std::string nothing_to_run(const RunPlan& plan) {
  if (!plan.cases.empty()) return {};
  std::string why;
  for (const std::string& n : plan.notes) why += (why.empty() ? "" : "; ") + n;
  return "no case to run: " + (why.empty() ? std::string("the sweep is empty") : why);
}

}  // namespace gdr
