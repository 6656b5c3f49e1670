// The plan of a run: every case of the sweep (test x mem x path x dtype x op x size x pair or
// pattern step x transport | reference) in the order it will execute. plan_run lays it out
// from the options and what the schedule decided (PlanInputs: the layout and the case time),
// and nothing else: no global steers it. The checks before the sweep (memory, nothing to run)
// and the sweep (src/sweep/runner.h) read it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives/layout.h"
#include "options/options.h"
#include "record/results.h"

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

// What a plan depends on beside the options, as the schedule decided it (src/planning/schedule.h).
struct PlanInputs {
  patterns::Layout layout;  // the ranks, the host map (host-rounds), the rounds run (--max-rounds)
  double case_time = 1.0;   // seconds of timed work a case under --iters auto: --case-time, or --budget's
};

// Every case of the run in the order it will execute, and the notes of what
// was skipped or changed. The checks before the sweep and the sweep read the
// same plan.
struct RunPlan {
  std::vector<Planned> cases;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> facts;  // what was scheduled and why (src/planning/schedule.h)
  PlanInputs inputs;      // what it was laid out with
  int budget_rounds = 0;  // --budget over rounds: the rounds its model fits at the start (0: every planned round)
};
RunPlan plan_run(const RunOptions& opt, const PlanInputs& in);

// The tournament round of a planned case of `rounds` or `host-rounds` (one-way tests run a round
// as two steps, one a direction), -1 for any other case.
int round_of(const CaseParams& c);

// Round-major order (plan_run): within each stretch of cases of one test, memory, path and
// dtype, the cases of other patterns first, then every size of round 1, every size of round 2,
// and so on. A run cut short (by --budget, a fault, ^C) then holds whole rounds in every size.
void order_rounds_first(std::vector<Planned>& cases);

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
MemoryNeed memory_need(const RunOptions& opt, const RunPlan& plan, int rank);

// Empty when this rank's buffers fit (memory_need against each kind's
// capacity), else one line naming the size, the memory kind and the limit.
std::string memory_shortfall(const RunOptions& opt, const MemoryNeed& need, int local_ranks);

// What the sweep reads of the plan: the index of each lane's last case (its buffers go back
// then), the ranks `me` exchanges with over the run, and the line that says what one
// iteration is and how many run.
std::map<LaneKey, std::size_t> last_case(const std::vector<Planned>& cases);
std::vector<int> needed_peers(const RunOptions& o, const patterns::Layout& at, int me);
std::string iterations_note(const RunOptions& o);

}  // namespace gdr
