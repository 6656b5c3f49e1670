// The plan of a run: every case of the sweep (test x mem x path x dtype x op x size x pair or
// pattern step x transport | reference) in the order it will execute, made once (plan_run);
// the checks before the sweep (memory, nothing to run) and the sweep (runner.h) read it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "options.h"
#include "results.h"

namespace gdr {

// One way of running a test in one (mem, path): our test over a transport,
// or a library's reference collective.
struct LaneKey {
  std::string test, name;
  bool reference;
  MemKind mem;
  Path path;
  std::string pattern = {};  // p2p over a concurrent pattern; empty: one pair at a time
  auto operator<=>(const LaneKey&) const = default;
};

struct Planned {
  LaneKey key;
  CaseParams params;
};

// Every case of the run in the order it will execute, and the notes of what
// was skipped or changed. Planned once (plan_run); the checks before the
// sweep and the sweep read the same plan.
struct RunPlan {
  std::vector<Planned> cases;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> facts;  // what was scheduled and why (src/schedule.h)
};
RunPlan plan_run(const RunOptions& opt, int ranks);

// "" when the sweep has at least one case, else one line saying why every
// case was skipped (-b 3 -e 7 -d double: no size holds one element): bad input.
std::string nothing_to_run(const RunPlan& plan);

// Bytes of each memory kind one rank's buffers take at once: a lane (one
// test or reference over one transport, memory kind and path) holds buffers
// sized for the largest message from its first case to its last, then hands
// them to the next lanes through the sweep's cache (src/memory/memory_cache.h); the
// lanes of one (test, memory, path) block run side by side. Replayed in plan
// order. Plus the staged path's pinned pools, kept to the end. Pinned host
// memory counts as host.
struct MemoryNeed {
  std::map<MemKind, std::size_t> bytes;  // kinds not listed: none
};
MemoryNeed memory_need(const RunOptions& opt, const RunPlan& plan, int ranks, int rank);

// Empty when this rank's buffers fit (memory_need against each kind's
// capacity), else one line naming the size, the memory kind and the limit.
std::string memory_shortfall(const RunOptions& opt, const MemoryNeed& need, int local_ranks);

// What the sweep reads of the plan: the index of each lane's last case (its buffers go back
// then), the ranks `me` exchanges with over the run, and the line that says what one
// iteration is and how many run.
std::map<LaneKey, std::size_t> last_case(const std::vector<Planned>& cases);
std::vector<int> needed_peers(const RunOptions& o, int n, int me);
std::string iterations_note(const RunOptions& o);

}  // namespace gdr
