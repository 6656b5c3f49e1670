// Live verdicts, so a slow link is named before the run ends: while a run goes, rank 0 judges each
// host link (host A's ranks sending to host B's) of the link patterns
// (`pair`, `rounds`, `host-rounds`) after every case (at fleet scale every
// kJudgeEveryS seconds), by the rule `gdrbench suspects` applies to the file
// afterwards, and names a host link or host as soon as the
// evidence so far convicts it: one line on stdout, one JSON Lines record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/component_options.h"
#include "record/results.h"

namespace gdr {

// The outlier rule shared by live verdicts and the retests (src/planning/retest.h),
// mirroring gdrbench suspects (results/gdranalysis/suspects.py).
namespace outlier {
double median(std::vector<double> v);                                    // of the finite values
std::pair<double, double> robust(const std::vector<double>& v);         // suspects._robust: median, MAD x 1.4826
// For every i, robust(v without v[i]), exactly, in O(n log n) (robust.loo_robust): a fleet's
// millions of links each against the others, where copying the others each time is O(n^2).
std::vector<std::pair<double, double>> loo_robust(const std::vector<double>& v);
double median_se(const CaseRecord& r, int rank, std::vector<double>& scratch);  // suspects._median_se
// An outlier: more than z scales above the median and more than min_ratio slower (log values).
struct Rule {
  double z = 5.0, min_ratio = 1.07;
  bool outlier(double value, double median, double scale) const;
};
}  // namespace outlier

// --live-verdicts, --live-min-slowdown (GDR_LIVE_VERDICTS, GDR_LIVE_MIN_SLOWDOWN).
struct LiveSettings {
  std::string mode = "on";
  double min_slowdown_pct = 7.0;  // validate's default (results/gdranalysis/validate.py)
};

// One conviction, printed and recorded once.
struct LiveFinding {
  std::string kind;                // "hostlink" or "host"
  std::string what;                // "gt2>gt4", "gt3"
  std::vector<std::string> hosts;  // the hosts it names
  double ratio = 0;                // median over its outliers: times its peers' median
  double max_z = 0;
  int outlier_in = 0, measured_in = 0;
  double p_value = 1;              // P(X >= outlier_in) by chance
  std::string group;               // where the conviction came: "bw mpi host direct rounds 64 KiB"
  int step = -1;                   // that case's step (-1: `pair`)
  int baseline = 0;                // other host links of its class it was judged against
  std::string side;                // host: "sending" or "receiving" (every link from it, or to it)
  double unix_s = 0;               // when rank 0 convicted it
  std::string line() const;        // "live suspect: host link gt2>gt4 1.25x ..."
  std::string json() const;        // {"record":"live_suspect",...}
};

class LiveVerdicts {
 public:
  // Fixed parts of the rule, as `gdrbench validate` passes them to suspects.
  static constexpr double kZ = 5.0, kP0 = 0.01, kAlpha = 1e-3;
  // A host link is judged only against this many others of its class (or more): with 4 (4 hosts, load 9)
  // one healthy link read 1.15x a tight baseline early in a size, and was named live, not by suspects.
  static constexpr int kMinBaseline = 8;

  explicit LiveVerdicts(const Settings& s);
  bool on() const { return on_; }
  // Groups of more links than this are judged at most every kJudgeEveryS seconds (and at
  // finish): a judgement is O(links), and after every case at 1,024 x 8 it would be O(links^2).
  static constexpr std::size_t kJudgeEveryCase = 20000;
  static constexpr double kJudgeEveryS = 5.0;

  // After each case, rank 0: what the evidence convicted just now, each once.
  std::vector<LiveFinding> add(const CaseRecord& r, const std::vector<std::string>& rank_hosts);
  // After the planned cases: judges what a group added since its last judgement.
  std::vector<LiveFinding> finish();
  // One line for the end of the run ("" when no link case ran).
  std::string summary() const;

 private:
  using GroupKey = std::tuple<std::string, std::string, std::string, std::string, std::string, std::size_t>;
  using Block = std::pair<std::string, std::string>;  // (sender host, receiver host)
  struct Decision {
    bool judged = false, outlier = false;
    double ratio = 1, z = 0;
  };
  // One size's links measured so far, kept as arrays so that a fleet's millions cost
  // O(links) a judgement, not a map of strings rebuilt after every case.
  struct Group {
    std::unordered_map<std::uint64_t, std::size_t> link_at;   // (sender << 32 | receiver) -> index
    std::vector<double> log_t, se;                            // per link: log median time, its standard error
    std::vector<std::size_t> block_of;                        // per link: its block
    std::unordered_map<std::uint64_t, std::size_t> block_at;  // (sender host id << 32 | receiver's) -> block
    std::vector<std::uint64_t> block_key;                     // block -> that key (ids in name order)
    std::vector<std::size_t> order;                           // blocks by key: by (sender, receiver) name
    std::vector<std::vector<std::size_t>> members;            // block -> its links
    std::vector<double> block_med;
    std::vector<bool> intra, dirty;                           // dirty: a link changed since its median
    std::vector<Decision> decisions;                          // per block, at this group (size)
    std::string label;
    int step = -1;                                            // the last case's
    bool unjudged = false;                                    // links added since the last judgement
    double judged_at = -1e300;                                // steady clock, seconds
  };
  std::vector<std::pair<std::size_t, int>> judge(Group& g, const GroupKey& key);
  std::vector<LiveFinding> convict(const Group& g, const std::vector<std::pair<std::size_t, int>>& judged);
  std::vector<LiveFinding> judge_and_convict(Group& g, const GroupKey& key);
  void learn_hosts(const std::vector<std::string>& rank_hosts);
  Block block_name(std::uint64_t key) const;

  bool on_ = true;
  double min_ratio_ = 1.07;
  std::map<GroupKey, Group> groups_;
  std::set<GroupKey> without_baseline_;
  std::vector<std::string> host_names_;       // the run's hosts, sorted: a host's id is its index
  std::vector<std::uint64_t> rank_host_id_;   // rank -> its host's id
  std::set<std::string> named_;  // "hostlink gt2>gt4", "host gt3": never twice
  std::set<std::string> hosts_seen_;
  int convicted_ = 0;
  bool judged_any_ = false, rounds_seen_ = false;
};

// Prints the line (stdout, flushed) and hands the record to every sink.
void report_live(const LiveFinding& f, std::vector<std::unique_ptr<ResultSink>>& sinks);

}  // namespace gdr
