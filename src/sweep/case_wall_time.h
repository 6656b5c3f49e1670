// Where a case's wall time goes, on rank 0: the scale.case_s.* facts
// (results/README.md). At fleet scale the cost of a case beside its timed
// work decides whether a schedule fits a maintenance window
// (docs/fleet-scale.md), so the run says which part it is: the test's own
// loop (warm-up, checks, its synchronisations), the gather of every rank's
// times, or rank 0's recording (path, sinks, live verdicts, retest plan).
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gdr {

class CaseCost {
 public:
  // One case's parts, seconds; `timed`: the longest sum of one rank's timed iterations.
  void add(double test, double timed, double gather, double record, double total) {
    const double parts[] = {test, timed, gather, record, total, std::max(0.0, total - timed)};
    for (std::size_t i = 0; i < kParts.size(); ++i) samples_[i].push_back(parts[i]);
  }

  // "scale.case_s.<part>_median" and "_max" for every part; none without cases.
  std::vector<std::pair<std::string, std::string>> facts() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (std::size_t i = 0; i < kParts.size(); ++i) {
      if (samples_[i].empty()) continue;
      const char* part = kParts[i];
      std::vector<double> v = samples_[i];
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      const double median = v[v.size() / 2];
      out.emplace_back(fmt::format("scale.case_s.{}_median", part), fmt::format("{:.6g}", median));
      out.emplace_back(fmt::format("scale.case_s.{}_max", part),
                       fmt::format("{:.6g}", *std::max_element(v.begin(), v.end())));
    }
    return out;
  }

 private:
  // test: Test::run (warm-up, timed loop, checks); gather: agreeing on the
  // iteration count and gathering the times; record: the path, the sinks,
  // live verdicts and the retest plan; total: the whole case; beside_timed:
  // total less the timed iterations.
  static constexpr std::array<const char*, 6> kParts = {"test", "timed", "gather", "record", "total", "beside_timed"};
  std::array<std::vector<double>, kParts.size()> samples_;  // by part, one value a case
};

}  // namespace gdr
