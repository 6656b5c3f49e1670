// Concurrent traffic patterns of the point-to-point tests (--pattern): which
// flows (sender -> receiver) run at the same time in each step of a pattern.
// `pair` is not here: it is today's one pair at a time (--pairs).
//
//   rounds:   all pairs in rounds, a round-robin tournament (circle method):
//             n-1 rounds for even n (n for odd: one rank rests per round),
//             each a perfect matching. bibw runs both directions of every
//             pair in one step; latency and bw run each round twice, once
//             per direction, so every ordered pair is covered in 2(n-1) steps.
//   incast:   step r: every other rank sends to root r (many to one).
//   fanout:   step r: root r sends to every other rank (one to many).
//   host-rounds: rounds over HOST pairs (host_rounds.h): in each round every
//             rank of host A runs against its rail partner on host B, all
//             host pairs of the round at once; O(hosts) steps, not O(ranks).
//             Needs the run's host map (Layout::hosts).
//   neighbor: one step: every rank sends to rank+1 on the ring and receives
//             from rank-1 at once, as the ring allreduce does.
// bibw patterns carry both directions of each flow's pair explicitly.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "layout.h"
#include "test.h"

namespace gdr::patterns {

using Flow = std::pair<int, int>;  // (sender or initiator, receiver or responder)

// A pattern: its schedule for a test whose flows go `directions` ways (2:
// bibw, both directions of each pair in one step) over the ranks of a
// layout. Each registers itself (GDR_REGISTER_PATTERN in patterns.cpp);
// --pattern takes its name.
struct PatternInfo {
  std::string name;
  int (*steps)(int directions, const Layout& at);
  std::vector<Flow> (*flows)(int directions, const Layout& at, int step);
};
std::vector<PatternInfo>& pattern_registry();
struct PatternRegistrar {
  explicit PatternRegistrar(PatternInfo info);
};
#define GDR_REGISTER_PATTERN(var, ...) \
  static ::gdr::patterns::PatternRegistrar var { ::gdr::patterns::PatternInfo{__VA_ARGS__} }

// The round-robin tournament (circle method) over n players: rounds(n)
// rounds (n-1 for even n, n for odd: one player rests per round), each a
// matching (a < b in every pair); every pair meets exactly once.
int rounds(int n);
std::vector<Flow> tournament_round(int n, int r);
// The rounds a tournament over n players runs when only the first `limit`
// run (--max-rounds; 0: all).
int rounds_run(int n, int limit);

// The pattern names --pattern takes besides `pair`.
const std::vector<std::string>& names();
bool known(std::string_view pattern);

// Steps of `pattern` over the layout's ranks, for a test of `directions`.
int steps(std::string_view pattern, int directions, const Layout& at);
// The flows of one step.
std::vector<Flow> flows(std::string_view pattern, int directions, const Layout& at, int step);
// The ranks `me` exchanges with in any step of the pattern.
std::vector<int> peers(std::string_view pattern, int directions, const Layout& at, int me);

// Most flows into / out of `me` in any one step (its receive regions, its acks).
int max_in(std::string_view pattern, int directions, const Layout& at, int me);
int max_out(std::string_view pattern, int directions, const Layout& at, int me);

// Bytes of one incoming flow's receive region for messages up to `max`:
// room for 64 slots within kFlowRegionBytes, never less than one message.
inline constexpr std::size_t kFlowRegionBytes = 16u << 20;
std::size_t region_bytes(std::size_t max);
// Distinct slots per flow for a case of c.bytes (at most the window, or the
// latency batch), under the user's --slots when given.
int slots(const CaseParams& c, std::size_t max);

// The concurrent variant of a latency or bandwidth test over `pattern`
// (TestInfo::create_on_pattern of collectives/p2p.cpp).
std::unique_ptr<Test> make_test(const TestTraits& test, std::string_view pattern, const Layout& at);
// What its prepare() allocates on rank `me`.
Footprint footprint(const TestTraits& test, std::string_view pattern, std::size_t max, const Layout& at, int me);

}  // namespace gdr::patterns
