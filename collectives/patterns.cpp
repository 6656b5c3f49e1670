// The schedules of the concurrent patterns (patterns.h says what each is).
#include "patterns.h"

#include "host_rounds.h"

#include <algorithm>
#include <set>

namespace gdr::patterns {

// Round r of the circle method over m (even) slots: slot m-1 stays, the
// others turn. Pairs with the resting slot n (odd n) are dropped.
std::vector<Flow> tournament_round(int n, int r) {
  const int m = n % 2 ? n + 1 : n;
  std::vector<Flow> out;
  auto add = [&](int a, int b) {
    if (a < n && b < n) out.emplace_back(std::min(a, b), std::max(a, b));
  };
  add(r % (m - 1), m - 1);
  for (int k = 1; k < m / 2; ++k) add((r + k) % (m - 1), (r - k + (m - 1)) % (m - 1));
  return out;
}

int rounds(int n) { return n % 2 ? n : n - 1; }

int rounds_run(int n, int limit) { return limit > 0 ? std::min(rounds(n), limit) : rounds(n); }

namespace {

std::vector<Flow> both_ways(const std::vector<Flow>& f) {
  std::vector<Flow> out;
  for (auto [a, b] : f) {
    out.emplace_back(a, b);
    out.emplace_back(b, a);
  }
  return out;
}

// rounds: round r of the circle method; one-way tests run each round twice,
// once per direction (steps 2r and 2r+1).
// host-rounds: the same over hosts (host_rounds.h), on the layout's host map.
template <class Round>
std::vector<Flow> directed(int d, int step, Round round) {
  if (d == 2) return both_ways(round(step));
  std::vector<Flow> out;
  for (auto [a, b] : round(step / 2)) out.push_back(step % 2 ? Flow{b, a} : Flow{a, b});
  return out;
}
int rounds_steps(int d, const Layout& at) {
  const int r = rounds_run(at.ranks, at.max_rounds);
  return d == 2 ? r : 2 * r;
}
std::vector<Flow> rounds_flows(int d, const Layout& at, int step) {
  return directed(d, step, [&](int r) { return tournament_round(at.ranks, r); });
}
int host_rounds_steps(int d, const Layout& at) {
  const HostMap* m = at.hosts.get();
  if (!m || static_cast<int>(m->host.size()) != at.ranks || !host_rounds_problem(*m).empty()) return 0;
  const int r = rounds_run(m->hosts(), at.max_rounds);
  return d == 2 ? r : 2 * r;
}
std::vector<Flow> host_rounds_flows(int d, const Layout& at, int step) {
  if (host_rounds_steps(d, at) == 0) return {};
  return directed(d, step, [&](int r) { return host_round_flows(*at.hosts, r); });
}

// incast, fanout: step r has root r, all others send to it (or it to them).
int one_root_per_rank(int, const Layout& at) { return at.ranks; }
template <bool Into>
std::vector<Flow> rooted(int d, const Layout& at, int step) {
  const int n = at.ranks;
  std::vector<Flow> out;
  for (int o = 0; o < n; ++o)
    if (o != step) out.push_back(Into ? Flow{o, step} : Flow{step, o});
  return d == 2 ? both_ways(out) : out;
}

// neighbor: one step. Two ranks are each other's both neighbours: one flow
// (one-way tests) or the pair both ways, never a pair twice in one direction.
int one_step(int, const Layout&) { return 1; }
std::vector<Flow> neighbor_flows(int d, const Layout& at, int) {
  const int n = at.ranks;
  if (n == 2) return d == 2 ? both_ways({{0, 1}}) : std::vector<Flow>{{0, 1}};
  std::vector<Flow> out;
  for (int i = 0; i < n; ++i) out.emplace_back(i, (i + 1) % n);
  if (d == 2)
    for (int i = 0; i < n; ++i) out.emplace_back(i, (i + n - 1) % n);
  return out;
}

GDR_REGISTER_PATTERN(reg_rounds, "rounds", rounds_steps, rounds_flows);
GDR_REGISTER_PATTERN(reg_incast, "incast", one_root_per_rank, rooted<true>);
GDR_REGISTER_PATTERN(reg_fanout, "fanout", one_root_per_rank, rooted<false>);
GDR_REGISTER_PATTERN(reg_neighbor, "neighbor", one_step, neighbor_flows);
GDR_REGISTER_PATTERN(reg_host_rounds, "host-rounds", host_rounds_steps, host_rounds_flows);

const PatternInfo* find(std::string_view p) {
  for (const PatternInfo& i : pattern_registry())
    if (i.name == p) return &i;
  return nullptr;
}

}  // namespace

std::vector<PatternInfo>& pattern_registry() {
  static std::vector<PatternInfo> r;
  return r;
}
PatternRegistrar::PatternRegistrar(PatternInfo info) { pattern_registry().push_back(std::move(info)); }

const std::vector<std::string>& names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> v;
    for (const PatternInfo& i : pattern_registry()) v.push_back(i.name);
    return v;
  }();
  return n;
}

bool known(std::string_view p) { return find(p) != nullptr; }

int steps(std::string_view p, int d, const Layout& at) {
  const PatternInfo* i = find(p);
  return at.ranks < 2 || !i ? 0 : i->steps(d, at);
}

std::vector<Flow> flows(std::string_view p, int d, const Layout& at, int step) {
  const PatternInfo* i = find(p);
  return i ? i->flows(d, at, step) : std::vector<Flow>{};
}

std::vector<int> peers(std::string_view p, int d, const Layout& at, int me) {
  std::set<int> s;
  for (int k = 0; k < steps(p, d, at); ++k)
    for (auto [a, b] : flows(p, d, at, k)) {
      if (a == me) s.insert(b);
      if (b == me) s.insert(a);
    }
  return {s.begin(), s.end()};
}

namespace {
int max_deg(std::string_view p, int dirs, const Layout& at, int me, bool in) {
  int most = 0;
  for (int k = 0; k < steps(p, dirs, at); ++k) {
    int d = 0;
    for (auto [a, b] : flows(p, dirs, at, k)) d += (in ? b : a) == me;
    most = std::max(most, d);
  }
  return most;
}
}  // namespace

int max_in(std::string_view p, int d, const Layout& at, int me) { return max_deg(p, d, at, me, true); }
int max_out(std::string_view p, int d, const Layout& at, int me) { return max_deg(p, d, at, me, false); }

std::size_t region_bytes(std::size_t max) {
  return std::max(max, std::min<std::size_t>(64 * max, kFlowRegionBytes));
}

int slots(const CaseParams& c, std::size_t max) {
  const std::size_t fit = std::max<std::size_t>(1, region_bytes(max) / std::max<std::size_t>(c.bytes, 1));
  const std::size_t most = c.traits.kind == TestKind::latency ? 64 : static_cast<std::size_t>(std::max(1, c.window));
  const std::size_t want = c.slots > 0 ? static_cast<std::size_t>(c.slots) : fit;
  return static_cast<int>(std::min({want, fit, most}));
}

}  // namespace gdr::patterns
