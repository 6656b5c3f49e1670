// Live verdicts (issue 34, item 2): while a run goes, rank 0 judges each
// host link (host A's ranks sending to host B's) of the link patterns
// (`pair`, `rounds`) after every case, by the rule `gdrbench suspects` applies
// to the file afterwards, and names a host link or host as soon as the
// evidence so far convicts it: one line on stdout, one JSON Lines record.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/component_options.h"
#include "results.h"

namespace gdr {

// The outlier rule shared by live verdicts and the retests (src/retest.h),
// mirroring gdrbench suspects (results/gdranalysis/suspects.py).
namespace outlier {
double median(std::vector<double> v);                                    // of the finite values
std::pair<double, double> robust(const std::vector<double>& v);         // suspects._robust: median, MAD x 1.4826
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
  // After each case, rank 0: what the evidence convicted just now, each once.
  std::vector<LiveFinding> add(const CaseRecord& r, const std::vector<std::string>& rank_hosts);
  // One line for the end of the run ("" when no link case ran).
  std::string summary() const;

 private:
  using GroupKey = std::tuple<std::string, std::string, std::string, std::string, std::string, std::size_t>;
  using Block = std::pair<std::string, std::string>;  // (sender host, receiver host)
  struct Group {
    std::map<std::pair<int, int>, double> log_t;  // link -> log median time
    std::map<std::pair<int, int>, double> se;     // link -> standard error of that median (log)
  };
  struct Decision {
    bool outlier = false;
    double ratio = 1, z = 0;
  };
  std::vector<std::pair<Block, int>> judge(const Group& g, const std::vector<std::string>& hosts,
                                           const GroupKey& key);
  std::vector<LiveFinding> convict(const std::vector<std::pair<Block, int>>& judged, const std::string& label,
                                   int step);

  bool on_ = true;
  double min_ratio_ = 1.07;
  std::map<GroupKey, Group> groups_;
  std::set<GroupKey> without_baseline_;
  std::map<Block, std::map<GroupKey, Decision>> decisions_;
  std::set<std::string> named_;  // "hostlink gt2>gt4", "host gt3": never twice
  std::set<std::string> hosts_seen_;
  int convicted_ = 0;
  bool judged_any_ = false, rounds_seen_ = false;
};

// Prints the line (stdout, flushed) and hands the record to every sink.
void report_live(const LiveFinding& f, std::vector<std::unique_ptr<ResultSink>>& sinks);

}  // namespace gdr
