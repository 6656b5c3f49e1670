#include "options/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "collectives/patterns.h"
#include "collectives/test.h"
#include "core/whole_file.h"
#include "core/component_options.h"
#include "core/errors.h"
#include "core/sizes.h"
#include "options/numbers.h"

namespace gdr {

double parse_duration(std::string_view text, std::string_view option) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const std::string_view unit(end, text.data() + text.size() - end);
  const double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  const NumberRule& r = number_rule("--budget");
  if (ec != std::errc{} || mult == 0 || !number_fits(r, v * mult))
    throw UsageError(fmt::format("{} '{}': want a duration such as 90s, 2m or 1h: {} s ({})", option,
                                 text.substr(0, 40), range_text(r), r.why));
  return v * mult;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

namespace {
std::vector<std::string> names_of_tests() {
  std::vector<std::string> v;
  for (auto& t : test_registry()) v.push_back(t.name);
  return v;
}

// A component's flag: its text is kept as typed, and read by the component's
// own parser with its environment twin (resolve_settings).
void add_component_flag(CLI::App& sub, RunArgs& a, const SettingSpec& s) {
  a.component_flags.erase(s.flag);  // a process may parse more than once: tests
  CLI::Option* o = sub.add_option_function<std::string>(
      s.flag, [&a, flag = s.flag](const std::string& v) { a.component_flags[flag] = v; }, s.help);
  o->type_name(s.type_name);
  if (!s.default_text.empty()) o->default_str(s.default_text);
}
}  // namespace

void add_run_options(CLI::App& sub, RunArgs& a) {
  // An option given twice takes its last value, as in most tools.
  sub.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub.add_option("-t,--test", a.tests, fmt::format("tests, comma list: {}", fmt::join(names_of_tests(), ", ")))
      ->capture_default_str();
  sub.add_option("-T,--transport", a.transports,
                 "transports, comma list (default: every one built in and usable here)");
  std::string kinds;
  for (MemKind k : mem_kinds()) kinds += (kinds.empty() ? "" : ", ") + std::string(mem_name(k));
  sub.add_option("-m,--mem", a.mems, "memory kinds, comma list: " + kinds)->capture_default_str();
  sub.add_option("--path", a.paths, "device-memory paths, comma list: direct, staged")
      ->capture_default_str();
  sub.add_option("-b,--minbytes", a.minbytes, "smallest message (K/M/G = powers of 1024)")
      ->capture_default_str();
  sub.add_option("-e,--maxbytes", a.maxbytes, "largest message")->capture_default_str();
  sub.add_option("-f,--stepfactor", a.stepfactor, "size multiplier between cases (>= 2)")
      ->capture_default_str();
  sub.add_option("-n,--iters", a.iters,
                 "timed iterations per case: a number, or auto (OSU's counts per test and size, "
                 "cut to --case-time)")
      ->capture_default_str();
  sub.add_option("-w,--warmup", a.warmup, "untimed warm-up iterations per case: a number, or auto")
      ->capture_default_str();
  sub.add_option("--case-time", a.case_time,
                 "under --iters auto: seconds of timed work per case, at the warm-up's pace "
                 "(never fewer than 5 iterations)")
      ->capture_default_str();
  sub.add_option("--budget", a.budget,
                 "wall-clock for the whole sweep (90s, 2m, 1h): sets --case-time so every planned case "
                 "fits; refused below the minimum; the plan is printed and stored");
  sub.add_option("-d,--datatype", a.datatypes,
                 "allreduce datatypes, comma list: float, double, int32, int64, half, bfloat16")
      ->capture_default_str();
  sub.add_option("-o,--op", a.ops, "allreduce ops, comma list: sum, prod, min, max")
      ->capture_default_str();
  sub.add_option("-c,--check", a.check,
                 "data check: after (one untimed checked batch after the timed ones, as nccl-tests), "
                 "every (every timed iteration too; 1), none (0)")
      ->capture_default_str();
  sub.add_option("--reference", a.references,
                 "reference rows beside ours, comma list: mpi (MPI_Allreduce), nccl, copy "
                 "(= copy-d2d,copy-d2h,copy-h2d), or none. Default: mpi, and on device memory the "
                 "copy rows at the bw/bibw sizes that those rows' %peak and path verdict need");
  sub.add_option("--output", a.output,
                 "HDF5 result file (default results/<UTC time>_<host>_<np>r.h5)")
      ->check(file_name_check);
  sub.add_flag("--force", a.force, "overwrite an existing --output file");
  sub.add_option("--json", a.json, "also write the table as JSON Lines to this file")->check(file_name_check);
  sub.add_option("--timeout", a.timeout, "longest any single wait may take, seconds")
      ->capture_default_str();
  sub.add_option("--pairs", a.pairs,
                 "p2p pairs: ring (i to i+1) or all (every ordered pair); default rank 0 with np/2");
  sub.add_option("--pattern", a.pattern,
                 "p2p traffic, comma list: pair (one pair at a time, --pairs), rounds (all pairs, "
                 "every rank busy, n-1 rounds of perfect matchings), host-rounds (all host pairs, "
                 "every rank against its rail partner, H-1 rounds), incast (all to one root, "
                 "rotating), fanout (one root to all, rotating), neighbor (all to rank+1 at once)")
      ->capture_default_str();
  sub.add_option("--max-rounds", a.max_rounds,
                 "rounds, host-rounds: run only the first N rounds of the tournament (each rank or host against "
                 "N others): a sample that finds slow hosts, NICs and GPUs in fewer steps, not every slow link; "
                 "all: every pair")
      ->capture_default_str();
  sub.add_option("--window", a.window, "messages in flight per bw/bibw iteration (64 as OSU)")
      ->capture_default_str();
  sub.add_option("--slots", a.slots,
                 "p2p: distinct buffers the messages of a window (a batch of round trips) land in "
                 "and are checked in; auto: up to 64 within 4 MiB (host memory: 1 MiB); 1: one buffer, as OSU")
      ->capture_default_str();
  sub.add_option("--chunk", a.chunk,
                 "ring allreduce pipeline chunk (auto: 1M on host memory, a quarter segment on GPU)")->capture_default_str();
  // Each component's flags (src/core/component_options.h), in one order for the
  // help in every build.
  for (const ComponentOptions* c : sorted_component_options())
    for (const SettingSpec& s : c->specs)
      if (!s.flag.empty()) add_component_flag(sub, a, s);
}

namespace {

template <typename T, typename F>
std::vector<T> parse_list(const std::string& text, const char* option, F parse) {
  std::vector<T> out;
  for (const std::string& s : split_list(text)) out.push_back(parse(s));
  if (out.empty()) throw UsageError(fmt::format("{} needs at least one value", option));
  return out;
}

std::vector<std::string> checked_names(const std::string& text, const char* option,
                                       const std::vector<std::string>& known) {
  return parse_list<std::string>(text, option, [&](const std::string& s) {
    if (std::find(known.begin(), known.end(), s) == known.end())
      throw UsageError(fmt::format("{}: unknown value '{}' (use {})", option, s,
                                   fmt::join(known, ", ")));
    return s;
  });
}

std::vector<std::string> default_transports() {
  std::vector<std::string> v;
  for (auto& t : transport_registry())
    if (t.unavailable_reason().empty()) v.push_back(t.name);
  return v;
}

// A whole number of the table (options/numbers.h), or the word (auto, all): `if_word` then.
int whole_or(const std::string& text, const char* option, const char* word, int if_word) {
  return text == word ? if_word : static_cast<int>(read_number_or(text, option, fmt::format("'{}'", word)));
}

}  // namespace

namespace {

// -t, -T, -m, --path: what runs, and on what.
void validate_lanes(const RunArgs& a, RunOptions& o) {
  o.tests = checked_names(a.tests, "--test", names_of_tests());
  std::vector<std::string> known_transports;
  for (auto& t : transport_registry()) known_transports.push_back(t.name);
  o.transports_defaulted = a.transports.empty();
  o.transports = o.transports_defaulted ? default_transports()
                                        : checked_names(a.transports, "--transport", known_transports);
  if (o.transports.empty()) throw UsageError("no transport is usable here (see `gdrbench list`)");
  for (const std::string& t : o.transports)
    if (std::string why = find_transport(t)->unavailable_reason(); !why.empty())
      throw UsageError(fmt::format("-T {}: not usable here: {}", t, why));
  o.mems = parse_list<MemKind>(a.mems, "--mem", parse_mem);
  o.paths = parse_list<Path>(a.paths, "--path", parse_path);
  // Host memory has one path: a --path staged given for it alone would be dropped without a word.
  const bool device = std::any_of(o.mems.begin(), o.mems.end(), [](MemKind m) { return m != MemKind::host; });
  if (!device && a.paths != RunArgs{}.paths && std::count(o.paths.begin(), o.paths.end(), Path::staged))
    throw UsageError("--path staged applies to device memory (-m cuda); host memory runs the direct path only: "
                     "leave --path out, or add -m cuda");
}

// Sizes, iterations, the case time and the budget: how much each case measures.
void validate_amounts(const RunArgs& a, RunOptions& o) {
  std::size_t lo = parse_size(a.minbytes, "--minbytes");
  std::size_t hi = parse_size(a.maxbytes, "--maxbytes");
  o.sizes = size_sweep(lo, hi, read_number(a.stepfactor, "--stepfactor"));
  o.maxbytes_text = a.maxbytes;
  o.iters = whole_or(a.iters, "--iters", "auto", 0);
  o.warmup = whole_or(a.warmup, "--warmup", "auto", -1);
  o.case_time = read_number(a.case_time, "--case-time");
  if (!a.budget.empty()) {
    o.budget_s = parse_duration(a.budget, "--budget");
    if (o.iters > 0) throw UsageError("--budget sizes the iterations of each case: leave out --iters");
  }
}

// --check and --reference: what each case verifies and what it runs beside.
void validate_checks(const RunArgs& a, RunOptions& o) {
  o.dtypes = parse_list<DType>(a.datatypes, "--datatype", parse_dtype);
  o.ops = parse_list<Op>(a.ops, "--op", parse_op);
  if (a.check == "after") o.check = CheckMode::after;
  else if (a.check == "every" || a.check == "1") o.check = CheckMode::every;
  else if (a.check == "none" || a.check == "0") o.check = CheckMode::none;
  else throw UsageError(fmt::format("--check '{}': use after, every (1) or none (0)", a.check));
  o.references_defaulted = a.references.empty();
  const std::string given = a.references.empty() ? std::string("mpi") : a.references;
  if (given == "none") return;
  std::vector<std::string> known;
  for (auto& r : reference_registry())
    if (std::find(known.begin(), known.end(), r.name) == known.end()) known.push_back(r.name);
  const std::vector<std::string> items = split_list(given);
  if (std::find(items.begin(), items.end(), "none") != items.end())
    throw UsageError(fmt::format("--reference '{}': none stands alone (no reference rows); else a list of {}, copy",
                                 given.substr(0, 40), fmt::join(known, ", ")));
  // "copy" is shorthand for every copy-* row (the copy engines' ceilings).
  std::string refs;
  for (const std::string& r : items) {
    std::size_t before = refs.size();
    for (auto& k : known)
      if (r == "copy" && k.rfind("copy-", 0) == 0) refs += k + ",";
    if (r == "copy" && refs.size() == before)
      throw UsageError("--reference copy: this gdrbench has no copy rows (built without CUDA)");
    if (r != "copy") refs += r + ",";
  }
  o.references = checked_names(refs, "--reference", known);
}

// --pairs, --pattern, --max-rounds, --window, --slots, --chunk: the traffic's shape.
void validate_shape(const RunArgs& a, RunOptions& o) {
  if (a.pairs.empty()) o.pairs = Pairs::fixed;
  else if (a.pairs == "ring") o.pairs = Pairs::ring;
  else if (a.pairs == "all") o.pairs = Pairs::all;
  else throw UsageError(fmt::format("--pairs: unknown value '{}' (use ring, all)", a.pairs));
  std::vector<std::string> known{"pair"};
  for (auto& p : patterns::names()) known.push_back(p);
  o.patterns = checked_names(a.pattern, "--pattern", known);
  if (a.max_rounds != "all") {
    o.max_rounds = whole_or(a.max_rounds, "--max-rounds", "all", 0);
    if (std::none_of(o.patterns.begin(), o.patterns.end(), [](auto& p) { return p == "rounds" || p == "host-rounds"; }))
      throw UsageError("--max-rounds applies to --pattern rounds or host-rounds");
  }
  o.window = static_cast<int>(read_number(a.window, "--window"));
  o.slots = whole_or(a.slots, "--slots", "auto", 0);
  o.chunk_bytes = a.chunk == "auto" ? 0 : parse_size(a.chunk, "--chunk");
}

}  // namespace

RunOptions validate(const RunArgs& a) {
  RunOptions o;
  validate_lanes(a, o);
  validate_amounts(a, o);
  validate_checks(a, o);
  o.timeout = read_number(a.timeout, "--timeout");
  validate_shape(a, o);
  o.settings = resolve_settings(a.component_flags, std::getenv);
  o.output = a.output;
  o.json = a.json;
  o.force = a.force;
  for (MemKind m : o.mems)
    if (MemoryOps* ops = memory_ops(m); !ops)
      throw UsageError(fmt::format("-m {}: this gdrbench was built without {} memory support",
                                   mem_name(m), mem_name(m)));
  return o;
}

void validate_for_ranks(const RunOptions& o, int ranks) {
  for (const std::string& t : o.tests)
    if (find_test(t)->traits.point_to_point() && ranks < 2)
      throw UsageError(fmt::format(
          "test '{}' needs at least 2 ranks (launched with {}); use mpirun -np 2 or more", t, ranks));
}

}  // namespace gdr
