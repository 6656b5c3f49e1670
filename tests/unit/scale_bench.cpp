// How long rank 0's per-run judging takes on a synthetic bw rounds run of N ranks, G a host,
// rank 1 slowed 2x: a benchmark, not a test (prints seconds; never asserts).
//   retest: Retest::add over every case of one size, then Retest::start (each link against
//           the others);
//   live:   LiveVerdicts::add after every case of two sizes (the host links measured so far,
//           judged; a host link is convicted at the second), then LiveVerdicts::finish.
//   build/tests/unit/gdr_scale_bench retest 1 256 1024 2048
//   build/tests/unit/gdr_scale_bench live 8 256 1024
//   retest-run: the whole second phase with BAD ranks slowed SLOW times, how its parts ended,
//   NOISE the links' spread (0, or persist,size,tail_p,tail_up,tail_excess as a noise model has):
//   build/tests/unit/gdr_scale_bench retest-run 1.1 4 0 64 256 1024
//   retest-hosts: the same after the first ROUNDS rounds of host-rounds (0: all) over HOSTS x G
//   ranks, each slowed part one rank (one rail) of a host:
//   build/tests/unit/gdr_scale_bench retest-hosts 1.1 4 0 64 8 64 1024
//   record: what rank 0 does with each case after the gather, at H hosts x G ranks under
//   host-rounds, ITERS iterations a rank (bw's auto count is 100), CASES steps at most: the row summary, the HDF5
//   and JSON Lines sinks, live verdicts. Seconds a case (median, max), bytes a case on disk:
//   build/tests/unit/gdr_scale_bench record 8 100 200 16 128 1024   (200 cases a size of hosts)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <functional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <sys/resource.h>
#include <sys/stat.h>

#include "collectives/host_rounds.h"
#include "collectives/patterns.h"
#include "collectives/test.h"
#include "outputs/hdf5_sink.h"
#include "verdicts/live_verdicts.h"
#include "planning/retest.h"
#include "synthetic_case.h"

namespace {
using namespace gdr;

double peak_rss_mib() {  // of this process so far: run one size per process to read it per size
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A bw case over `flows` of n ranks: each sender times 10 iterations of 1 ms, x `slow` when
// either end is in `slowed`, with 1 % noise an iteration.
CaseRecord record(int n, std::vector<std::pair<int, int>> flows, const std::string& pattern, int step,
                  std::size_t bytes, const std::set<int>& slowed, double slow, std::mt19937& rng,
                  const std::function<double(int, int)>& link = nullptr) {
  std::normal_distribution<double> noise(0.0, 0.01);
  std::pair<int, int> last{-1, -1};
  double f = 1;  // the link's factor, drawn once per flow (its 10 iterations)
  return synthetic_bw_case(n, 10, bytes, pattern, step, std::move(flows), [&](int a, int b) {
    if (std::pair{a, b} != last) {
      last = {a, b};
      f = (slowed.count(a) || slowed.count(b) ? slow : 1.0) * (link ? link(a, b) : 1.0);
    }
    return 1e-3 * f * std::exp(noise(rng));
  });
}

CaseRecord rounds_case(int n, int k, std::mt19937& rng, std::size_t bytes = 65536) {  // rank 1 slowed 2x
  return record(n, patterns::flows("rounds", 1, n, k), "rounds", k, bytes, {1}, 2.0, rng);
}

RunOptions rounds_with_retests(const std::string& pattern = "rounds") {
  RunOptions o;
  o.tests = {"bw"};
  o.patterns = {pattern};
  o.settings.put(RetestSettings{.mode = "auto"});
  o.settings.put(LiveSettings{});
  return o;
}

void bench_retest(int n) {
  Retest rt(rounds_with_retests(), n);
  std::mt19937 rng(1);
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t links = 0;
  for (int k = 0; k < patterns::steps("rounds", 1, n); ++k) {
    CaseRecord r = rounds_case(n, k, rng);
    links += r.params.flows.size();
    rt.add(r, static_cast<std::size_t>(k));
  }
  const double add_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<std::string> notes;
  const bool any = rt.start(notes);
  std::printf("| %d | %zu | %.2f | %.2f | %s | %.0f |\n", n, links, add_s, seconds_since(t1), any ? "yes" : "no",
              peak_rss_mib());
}

// The whole second phase at scale: one size of rounds over n ranks (1 % noise an iteration),
// `bad` ranks spread over the run slowed by `slow` both ways, then every retest round rank 0
// plans, each step timed by the same model. Prints how the parts ended against the truth.
// A link's spread beyond the iterations' (sim_noise.NoiseModel's fields, log units): a part fixed
// per link (persist), a part drawn at each measurement (size), and with probability tail_p a
// tail event of 4 size sd plus an exponential excess, slower with probability tail_up.
struct LinkNoise {
  double persist = 0, size = 0, tail_p = 0, tail_up = 0, tail_excess = 0;
  static LinkNoise parse(const std::string& text) {  // "0" or "persist,size,tail_p,tail_up,tail_excess"
    LinkNoise z;
    if (text != "0" && std::sscanf(text.c_str(), "%lf,%lf,%lf,%lf,%lf", &z.persist, &z.size, &z.tail_p, &z.tail_up,
                                   &z.tail_excess) != 5)
      throw std::invalid_argument("NOISE: want 0 or persist,size,tail_p,tail_up,tail_excess");
    return z;
  }
};

// per_host > 0: host-rounds over n / per_host hosts (its first `rounds` rounds, as --max-rounds;
// 0: all), each slowed part one rank of a host (a slow NIC or GPU: one rail), hosts spread over
// the run; per_host 0: rounds over the ranks.
void bench_retest_run(int n, int bad, double slow, const std::string& noise_text, int per_host = 0, int rounds = 0) {
  const LinkNoise ln = LinkNoise::parse(noise_text);
  const std::string pattern = per_host > 0 ? "host-rounds" : "rounds";
  patterns::Layout layout(n);
  std::set<int> slowed;
  if (per_host > 0) {
    std::vector<std::string> names;
    for (int r = 0; r < n; ++r) names.push_back(fmt::format("h{}", r / per_host));
    layout = patterns::Layout(n, rounds, std::make_shared<const patterns::HostMap>(patterns::host_map(names)));
    const int hosts = n / per_host;
    for (int k = 0; k < bad; ++k) slowed.insert((1 + k * (hosts / std::max(1, bad))) * per_host + k % per_host);
  } else {
    for (int k = 0; k < bad; ++k) slowed.insert(1 + k * (n / std::max(1, bad)));
  }
  Retest rt(rounds_with_retests(pattern), layout);
  std::mt19937 rng(7);
  std::normal_distribution<double> unit(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::unordered_map<std::uint64_t, double> persist;
  auto link = [&](int a, int b) {
    auto [it, fresh] = persist.emplace(static_cast<std::uint64_t>(a) << 32 | static_cast<std::uint32_t>(b), 0.0);
    if (fresh) it->second = ln.persist * unit(rng);
    double x = it->second + ln.size * unit(rng);
    if (ln.tail_p > 0 && uniform(rng) < ln.tail_p) {
      const double mag = 4 * ln.size + std::exponential_distribution<double>(1.0 / std::max(ln.tail_excess, 1e-9))(rng);
      x += uniform(rng) < ln.tail_up ? mag : -mag;
    }
    return std::exp(x);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const int first_steps = patterns::steps(pattern, 1, layout);
  for (int k = 0; k < first_steps; ++k)
    rt.add(record(n, patterns::flows(pattern, 1, layout, k), pattern, k, 65536, slowed, slow, rng, link),
           static_cast<std::size_t>(k));
  std::vector<std::string> lines, events;
  std::vector<std::pair<std::string, std::string>> facts;
  int steps = 0;
  if (rt.start(lines))
    for (int round = 1;; ++round) {
      const std::string msg = rt.next_round(round);
      if (msg.empty()) break;
      auto st = Retest::decode(msg);
      for (std::size_t k = 0; k < st.flows.size(); ++k, ++steps) {
        CaseRecord r = record(n, st.flows[k], "retest", static_cast<int>(k), 65536, slowed, slow, rng, link);
        rt.judge(r, round, static_cast<int>(k));
      }
      rt.end_round(round);
    }
  rt.finish("no verdict within the rounds", lines, events, facts);
  std::string verdicts;
  for (auto& [k, v] : facts)
    if (k == "retest.verdicts") verdicts = v;
  // "rank 5 sending=convicted;link 3>9=cleared;..." against the truth (a part is slow when it is a
  // slowed rank's side, or a link one of whose ends is slowed)
  int right = 0, wrong = 0, cleared = 0, unresolved = 0;
  std::set<int> convicted_ranks;
  for (std::size_t at = 0; at < verdicts.size();) {
    std::size_t end = verdicts.find(';', at);
    if (end == std::string::npos) end = verdicts.size();
    const std::string part = verdicts.substr(at, end - at), state = part.substr(part.find('=') + 1);
    at = end + 1;
    int a = -1, b = -1;
    if (std::sscanf(part.c_str(), "rank %d", &a) != 1) std::sscanf(part.c_str(), "link %d>%d", &a, &b);
    const bool truly_slow = slowed.count(a) || slowed.count(b);
    if (state == "convicted") {
      (truly_slow ? right : wrong) += 1;
      if (truly_slow && b < 0) convicted_ranks.insert(a);
    } else if (state == "cleared") {
      cleared += 1;
      wrong += truly_slow;
    } else {
      unresolved += 1;
    }
  }
  const std::string who = per_host > 0 ? fmt::format("{} x {}, {} steps", n / per_host, per_host, first_steps)
                                       : fmt::format("{}", n);
  std::printf("| %s | %d | %g | %d | %d | %d | %d | %zu/%d | %d | %.2f |\n", who.c_str(), bad, slow, right, wrong, cleared,
              unresolved, convicted_ranks.size(), bad, steps, seconds_since(t0));
}

void bench_live(int n, int per_host) {
  Settings s;
  s.put(LiveSettings{});
  LiveVerdicts lv(s);
  std::vector<std::string> hosts;
  for (int r = 0; r < n; ++r) hosts.push_back(fmt::format("h{}", r / per_host));
  std::mt19937 rng(1);
  std::size_t links = 0, found = 0;
  double total = 0, worst = 0;
  for (std::size_t bytes : {65536u, 262144u})
    for (int k = 0; k < patterns::steps("rounds", 1, n); ++k) {
      CaseRecord r = rounds_case(n, k, rng, bytes);
      links += r.params.flows.size();
      const auto t0 = std::chrono::steady_clock::now();
      found += lv.add(r, hosts).size();
      const double s = seconds_since(t0);
      total += s;
      worst = std::max(worst, s);
    }
  const auto t0 = std::chrono::steady_clock::now();
  found += lv.finish().size();
  total += seconds_since(t0);
  std::printf("| %d x %d | %zu | %.2f | %.4f | %zu | %.0f |\n", n / per_host, per_host, links, total, worst, found,
              peak_rss_mib());
}
}  // namespace

// Rank 0's recording of `cases` host-rounds cases at hosts x per_host ranks (runner.cpp's
// order after run_case: summary, every sink, live verdicts), each timed; files under /tmp.
void bench_record(int per_host, int iters, int hosts, int cases) {
  const int n = hosts * per_host;
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) names.push_back(fmt::format("h{:04d}", r / per_host));
  const patterns::Layout layout(n, 0, std::make_shared<const patterns::HostMap>(patterns::host_map(names)));
  const std::string h5 = "/tmp/gdr_scale_bench_record.h5", jsonl = "/tmp/gdr_scale_bench_record.jsonl";
  std::vector<std::unique_ptr<ResultSink>> sinks;
  sinks.push_back(make_hdf5_sink(h5, true, nullptr));
  sinks.push_back(make_jsonl_sink(jsonl, true, 60));
  RunMetadata meta;
  meta.ranks = n;
  meta.hosts = names;
  meta.local_ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) meta.local_ranks[static_cast<std::size_t>(r)] = r % per_host;
  meta.rank_gpus.assign(static_cast<std::size_t>(n), "");
  meta.rank_hcas.assign(static_cast<std::size_t>(n), "");
  for (auto& sk : sinks) sk->begin(meta);
  Settings st;
  st.put(LiveSettings{});
  LiveVerdicts lv(st);
  std::mt19937 rng(3);
  std::vector<double> each;
  double parts[4] = {0, 0, 0, 0};  // summary, HDF5, JSON Lines, live verdicts: sums
  const int steps = std::min(cases, patterns::steps("host-rounds", 1, layout));
  for (int k = 0; k < steps; ++k) {
    CaseRecord r = synthetic_bw_case(n, iters, 131072, "host-rounds", k, patterns::flows("host-rounds", 1, layout, k),
                                     [&](int, int) { return 1e-5 * std::exp(0.01 * std::normal_distribution<>()(rng)); });
    const auto t0 = std::chrono::steady_clock::now();
    const TestInfo& ti = *find_test("bw");
    summarize_record(r, ti.bytes_moved(r.params), ti.bus_factor(r.ranks));
    parts[0] += seconds_since(t0);
    for (std::size_t i = 0; i < sinks.size(); ++i) {
      const auto t1 = std::chrono::steady_clock::now();
      sinks[i]->add(r);
      parts[1 + i] += seconds_since(t1);
    }
    const auto t2 = std::chrono::steady_clock::now();
    for (const LiveFinding& f : lv.add(r, names)) report_live(f, sinks);
    parts[3] += seconds_since(t2);
    each.push_back(seconds_since(t0));
  }
  for (auto& sk : sinks) sk->end(meta);
  sinks.clear();
  struct stat h5_st {}, js_st {};
  ::stat(h5.c_str(), &h5_st);
  ::stat(jsonl.c_str(), &js_st);
  std::vector<double> sorted = each;
  std::sort(sorted.begin(), sorted.end());
  std::printf("| %d x %d | %d | %d | %.4f | %.4f | %.4f, %.4f, %.4f, %.4f | %.0f | %.0f | %.0f |\n", hosts,
              per_host, iters, steps, sorted[sorted.size() / 2], sorted.back(), parts[0] / steps, parts[1] / steps,
              parts[2] / steps, parts[3] / steps, static_cast<double>(h5_st.st_size) / steps,
              static_cast<double>(js_st.st_size) / steps, peak_rss_mib());
}

int main(int argc, char** argv) {
  const std::string what = argc > 2 ? argv[1] : "";
  if (what == "retest-run" && argc > 5) {  // retest-run SLOW-FACTOR BAD NOISE RANKS...
    std::printf("| ranks | slowed | x | convicted, slow | wrong (convicted healthy or cleared slow) | cleared | "
                "unresolved | slowed ranks convicted | retest steps | s |\n| --- | --- | --- | --- | --- | --- | --- "
                "| --- | --- | --- |\n");
    for (int i = 5; i < argc; ++i) bench_retest_run(std::stoi(argv[i]), std::stoi(argv[3]), std::stod(argv[2]), argv[4]);
    return 0;
  }
  if (what == "retest-hosts" && argc > 7) {  // retest-hosts SLOW BAD NOISE ROUNDS RANKS-A-HOST HOSTS...
    std::printf("| hosts x ranks, first-phase steps | slowed | x | convicted, slow | wrong (convicted healthy or cleared "
                "slow) | cleared | unresolved | slowed ranks convicted | retest steps | s |\n| --- | --- | --- | --- | "
                "--- | --- | --- | --- | --- | --- |\n");
    const int per_host = std::stoi(argv[6]);
    for (int i = 7; i < argc; ++i) {
      bench_retest_run(std::stoi(argv[i]) * per_host, std::stoi(argv[3]), std::stod(argv[2]), argv[4], per_host,
                       std::stoi(argv[5]));
      std::fflush(stdout);
    }
    return 0;
  }
  if (what == "record" && argc > 5) {  // record RANKS-A-HOST ITERS CASES HOSTS...
    std::printf("| hosts x ranks | iterations | cases | s a case, median | max | mean s: summary, HDF5, JSON Lines, live "
                "verdicts | HDF5 B a case | JSON Lines B a case | peak RSS MiB |\n| --- | --- | --- | --- | --- | --- | --- "
                "| --- | --- |\n");
    for (int i = 5; i < argc; ++i) {
      bench_record(std::stoi(argv[2]), std::stoi(argv[3]), std::stoi(argv[i]), std::stoi(argv[4]));
      std::fflush(stdout);
    }
    return 0;
  }
  if (what != "retest" && what != "live") {
    std::fprintf(stderr, "usage: gdr_scale_bench retest|live RANKS-A-HOST RANKS... | retest-run SLOW BAD NOISE RANKS... "
                         "| retest-hosts SLOW BAD NOISE ROUNDS RANKS-A-HOST HOSTS... "
                         "| record RANKS-A-HOST ITERS CASES HOSTS...\n");
    return 2;
  }
  const int per_host = std::stoi(argv[2]);
  std::printf(what == "retest" ? "| ranks | links | add s | start s | something to retest | peak RSS MiB |\n| --- | --- | --- | --- | --- | --- |\n"
                               : "| hosts x ranks | links, 2 sizes | add and finish s, all cases | slowest case s | findings | peak RSS MiB |\n| --- | --- | --- | --- | --- | --- |\n");
  for (int i = 3; i < argc; ++i) {
    if (what == "retest") bench_retest(std::stoi(argv[i]));
    else bench_live(std::stoi(argv[i]), per_host);
    std::fflush(stdout);
  }
}
