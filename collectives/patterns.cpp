// The schedules of the concurrent patterns (patterns.h says what each is).
#include "patterns.h"

#include <algorithm>
#include <set>

namespace gdr::patterns {
namespace {

bool two_way(std::string_view test) { return test == "bibw"; }

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

std::vector<Flow> both_ways(const std::vector<Flow>& f) {
  std::vector<Flow> out;
  for (auto [a, b] : f) {
    out.emplace_back(a, b);
    out.emplace_back(b, a);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& names() {
  static const std::vector<std::string> n{"rounds", "incast", "fanout", "neighbor"};
  return n;
}

bool known(std::string_view p) { return std::find(names().begin(), names().end(), p) != names().end(); }

int steps(std::string_view p, std::string_view test, int n) {
  if (n < 2) return 0;
  if (p == "rounds") return two_way(test) ? rounds(n) : 2 * rounds(n);
  if (p == "incast" || p == "fanout") return n;
  if (p == "neighbor") return 1;
  return 0;
}

std::vector<Flow> flows(std::string_view p, std::string_view test, int n, int step) {
  std::vector<Flow> out;
  if (p == "rounds") {
    if (two_way(test)) return both_ways(tournament_round(n, step));
    for (auto [a, b] : tournament_round(n, step / 2)) out.push_back(step % 2 ? Flow{b, a} : Flow{a, b});
    return out;
  }
  if (p == "incast" || p == "fanout") {
    for (int o = 0; o < n; ++o)
      if (o != step) out.push_back(p == "incast" ? Flow{o, step} : Flow{step, o});
    return two_way(test) ? both_ways(out) : out;
  }
  if (p == "neighbor") {
    // Two ranks are each other's both neighbours: one flow (latency, bw) or
    // the pair both ways (bibw), never a pair twice in one direction.
    if (n == 2) return two_way(test) ? both_ways({{0, 1}}) : std::vector<Flow>{{0, 1}};
    for (int i = 0; i < n; ++i) out.emplace_back(i, (i + 1) % n);
    if (two_way(test))
      for (int i = 0; i < n; ++i) out.emplace_back(i, (i + n - 1) % n);
    return out;
  }
  return out;
}

std::vector<int> peers(std::string_view p, std::string_view test, int n, int me) {
  std::set<int> s;
  for (int k = 0; k < steps(p, test, n); ++k)
    for (auto [a, b] : flows(p, test, n, k)) {
      if (a == me) s.insert(b);
      if (b == me) s.insert(a);
    }
  return {s.begin(), s.end()};
}

namespace {
int max_deg(std::string_view p, std::string_view test, int n, int me, bool in) {
  int most = 0;
  for (int k = 0; k < steps(p, test, n); ++k) {
    int d = 0;
    for (auto [a, b] : flows(p, test, n, k)) d += (in ? b : a) == me;
    most = std::max(most, d);
  }
  return most;
}
}  // namespace

int max_in(std::string_view p, std::string_view test, int n, int me) { return max_deg(p, test, n, me, true); }
int max_out(std::string_view p, std::string_view test, int n, int me) { return max_deg(p, test, n, me, false); }

std::size_t region_bytes(std::size_t max) {
  return std::max(max, std::min<std::size_t>(64 * max, kFlowRegionBytes));
}

int slots(const CaseParams& c, std::size_t max) {
  const std::size_t fit = std::max<std::size_t>(1, region_bytes(max) / std::max<std::size_t>(c.bytes, 1));
  const std::size_t most = c.test == "latency" ? 64 : static_cast<std::size_t>(std::max(1, c.window));
  const std::size_t want = c.slots > 0 ? static_cast<std::size_t>(c.slots) : fit;
  return static_cast<int>(std::min({want, fit, most}));
}

}  // namespace gdr::patterns
