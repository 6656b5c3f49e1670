// How long rank 0's per-run judging takes on a synthetic bw rounds run of N ranks, G a host,
// rank 1 slowed 2x: a benchmark, not a test (prints seconds; never asserts).
//   retest: Retest::add over every case of one size, then Retest::start (each link against
//           the others);
//   live:   LiveVerdicts::add after every case of two sizes (the host links measured so far,
//           judged; a host link is convicted at the second), then LiveVerdicts::finish.
//   build/tests/unit/gdr_scale_bench retest 1 256 1024 2048
//   build/tests/unit/gdr_scale_bench live 8 256 1024
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include <sys/resource.h>

#include "collectives/patterns.h"
#include "collectives/test.h"
#include "live_verdicts.h"
#include "retest.h"

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

CaseRecord record(int n, int k, std::mt19937& rng, std::size_t bytes = 65536) {
  constexpr int iters = 10;
  std::normal_distribution<double> noise(0.0, 0.01);
  CaseRecord r;
  r.params.test = "bw";
  r.params.transport = "mpi";
  r.params.has_dtype = false;
  r.params.bytes = bytes;
  r.params.pattern = "rounds";
  r.params.step = k;
  r.params.iters = iters;
  r.params.flows = patterns::flows("rounds", 1, n, k);
  r.params.traits = find_test("bw")->traits;
  r.ranks = n;
  r.times.assign(static_cast<std::size_t>(n) * iters, std::numeric_limits<double>::quiet_NaN());
  for (auto [a, b] : r.params.flows)
    for (int i = 0; i < iters; ++i) r.times[a * iters + i] = 1e-3 * (a == 1 || b == 1 ? 2.0 : 1.0) * std::exp(noise(rng));
  return r;
}

void bench_retest(int n) {
  RunOptions o;
  o.tests = {"bw"};
  o.patterns = {"rounds"};
  o.settings.put(RetestSettings{.mode = "auto"});
  o.settings.put(LiveSettings{});
  Retest rt(o, n);
  std::mt19937 rng(1);
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t links = 0;
  for (int k = 0; k < patterns::steps("rounds", 1, n); ++k) {
    CaseRecord r = record(n, k, rng);
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
      CaseRecord r = record(n, k, rng, bytes);
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

int main(int argc, char** argv) {
  const std::string what = argc > 2 ? argv[1] : "";
  if (what != "retest" && what != "live") {
    std::fprintf(stderr, "usage: gdr_scale_bench retest|live RANKS-A-HOST RANKS...\n");
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
