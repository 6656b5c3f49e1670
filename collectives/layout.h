// The ranks a concurrent pattern lays its flows over, as the planner decided
// them: how many, which host and rail each sits on (host-rounds), and how many
// tournament rounds run (--max-rounds, or the rounds a --budget fits). A value:
// the schedule decides it, the plan carries it, the tests read it; nothing of
// it lives in a global, so two plans of one process never see each other's.
#pragma once

#include <memory>
#include <utility>

namespace gdr::patterns {

struct HostMap;  // host_rounds.h

struct Layout {
  int ranks = 0;
  int max_rounds = 0;                         // rounds, host-rounds: the first N rounds only (0: all)
  std::shared_ptr<const HostMap> hosts = {};  // host-rounds' map; none: host-rounds has no steps

  Layout() = default;
  // n ranks, every round, no host map: what a pattern over ranks alone needs.
  Layout(int n) : ranks(n) {}  // NOLINT(google-explicit-constructor): a rank count is a layout
  Layout(int n, int rounds, std::shared_ptr<const HostMap> map)
      : ranks(n), max_rounds(rounds), hosts(std::move(map)) {}
};

}  // namespace gdr::patterns
