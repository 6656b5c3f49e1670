// The adaptive second phase of --pattern rounds and host-rounds (--retest):
// after the planned steps, rank 0 takes the links that the first phase's
// evidence makes suspicious (the outlier rule of live verdicts and suspects,
// src/verdicts/live_verdicts.h's outlier::Rule), splits each into its halves and
// retests them in rounds against partners judged healthy, within the same
// MPI job, until each part is convicted or cleared:
//   - a rank in suspicious links with two or more other ranks is tested as
//     an endpoint: its sending side (it -> a healthy partner) and/or its
//     receiving side (a healthy partner -> it);
//   - a suspicious link a>b is tested as itself and as its two halves:
//     a sending to a healthy partner, a healthy partner sending to b;
//     the link is blamed only when both halves are fast in the same round;
//   - an endpoint that comes out fast hands its links on to the next round
//     as links (the suspicion halves: from a rank to its links).
// A probe is slow when an outlier by the rule (more than its z and its
// minimum ratio), fast when no slower than that minimum ratio, and unclear in
// between (slower, but not significantly so): an unclear probe counts for
// neither, so a part is never cleared on the strength of a spread too wide
// to tell (a rank 47x slower at z 4.5 on 2 loaded cores).
// A part is convicted when slow in kRetestConfirm rounds (a different healthy
// partner each round where there are several), cleared when fast in as many;
// what is open after --retest-rounds rounds, or when the budget ran out, is
// "unresolved". Every step is recorded as a case of pattern `retest` with the
// probes, partners and round as JSON, so `gdrbench suspects` recomputes the
// verdict from the file alone (results/gdranalysis/retest.py mirrors this).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectives/layout.h"
#include "options/options.h"
#include "verdicts/live_verdicts.h"
#include "record/results.h"

namespace gdr {

// --retest auto|off, --retest-rounds N (GDR_RETEST, GDR_RETEST_ROUNDS).
struct RetestSettings {
  std::string mode = "off";  // opt-in until its error rates are measured (docs/fleet-scale.md)
  int rounds = 4;
};
inline constexpr int kRetestStepsPerRound = 3;  // a round's steps at most (the budget's share per round)
inline constexpr int kRetestConfirm = 2;        // slow rounds that convict, fast rounds that clear

// Whether the retests can run in this plan: --retest auto and a one-way
// point-to-point test (bw, latency) over rounds or host-rounds.
bool retest_applies(const RunOptions& o);
// Cases --budget sets aside for them: rounds x kRetestStepsPerRound, or 0.
int retest_reserve_cases(const RunOptions& o);

namespace retest {

using Link = std::pair<int, int>;  // sender -> receiver
enum class Part { send, recv, link };

struct Component {
  Part part = Part::link;
  int a = -1, b = -1;             // send/recv: rank a; link: a -> b
  std::string state = "open";     // open, convicted, cleared, explained, unresolved
  int slow = 0, fast = 0;         // rounds it was slow / fast in
  std::string evidence;           // "round 1: 2.10x with rank 3 (z 14.0); ..."
  std::vector<Link> explains;     // send/recv: the suspicious links it may explain
  std::string name() const;       // "rank 2 sending", "link 0>1"
  const char* part_name() const;  // "send", "recv", "link"
};

struct Probe {
  int comp = -1;
  int src = -1, dst = -1;  // the flow
  int partner = -1;        // send/recv: the healthy rank; link: -1
};

struct State {
  std::vector<Component> comps;
  std::set<int> healthy;  // partners: ranks in no part under test
};

// Phase 1's suspicious links -> the parts to retest (greedy: the rank with the
// most distinct suspicious neighbours first, while it has two or more).
State plan_components(const std::vector<Link>& suspicious, int ranks);
// Healthy partners for rank me among its peers (in no part, or all its parts
// cleared; where none: link ends not tested as an endpoint, nothing convicted).
std::vector<int> partners(const State& s, int me, Part role, const std::vector<int>& peers);
// One round: at most max_steps steps, each a matching (a rank in one flow at
// most), every open part's probe where it fits; partners rotate with the round.
std::vector<std::vector<Probe>> pack_round(const State& s, int round,
                                           const std::function<std::vector<int>(int)>& peers, int max_steps);
// After a round: slow[i] and what[i] ("2.10x with rank 3 (z 14.0)") for probes[i].
void update(State& s, const std::vector<Probe>& probes, const std::vector<bool>& slow,
            const std::vector<std::string>& what, int round);
// After the last round: what is still open is unresolved.
void close(State& s, const std::string& why);

}  // namespace retest

// Rank 0's side of the phase: the first phase's evidence, the rounds' plans,
// the judgement of each step and the verdict. The runner runs the steps.
class Retest {
 public:
  // `at`: the run's layout, whose patterns the retests' steps follow (their peers).
  explicit Retest(const RunOptions& o, patterns::Layout at);
  bool on() const { return on_; }
  int rounds() const { return rounds_; }
  // After each planned case (rank 0): keeps the link times of rounds/host-rounds.
  void add(const CaseRecord& r, std::size_t plan_index);
  // After the planned cases: the suspicious links and the parts to test;
  // false when there is nothing to retest. Adds the notes to print.
  bool start(std::vector<std::string>& notes);
  // The round's steps for the broadcast: "PLANINDEX;a:b,c:d|e:f" ("": done).
  std::string next_round(int round);
  // Judges one step's record and fills its params.retest.
  void judge(CaseRecord& rec, int round, int step);
  void end_round(int round);
  // The verdict: lines to print, JSON Lines records, facts.
  void finish(const std::string& why_stopped, std::vector<std::string>& lines, std::vector<std::string>& events,
              std::vector<std::pair<std::string, std::string>>& facts);

  struct Steps {
    std::size_t plan_index = 0;
    std::vector<std::vector<std::pair<int, int>>> flows;
  };
  static Steps decode(const std::string& msg);

 private:
  struct Group {
    std::string label, pattern;
    int directions = 1;
    std::size_t plan_index = 0;
    std::map<retest::Link, double> log_t, se;
  };
  void ends(const std::string& key, const Group& g, std::map<retest::Link, std::string>& why,
            std::map<std::string, int>& per_group) const;

  bool on_ = false;
  patterns::Layout at_;
  int rounds_ = 3;
  outlier::Rule rule_;
  std::map<std::string, Group> groups_;  // "test transport mem path pattern bytes"
  std::string lane_;                     // the group the retests run in
  std::vector<std::pair<retest::Link, std::string>> suspicious_;  // with the evidence that made it so
  retest::State state_;
  std::set<int> healthy0_;  // ranks in no part at the start: their links are the probes' baseline
  std::vector<std::vector<retest::Probe>> round_;  // this round's steps
  std::vector<retest::Probe> done_;
  std::vector<bool> slow_;
  std::vector<std::string> what_;
  int rounds_run_ = 0, steps_run_ = 0;
};

}  // namespace gdr
