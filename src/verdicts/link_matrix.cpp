#include "verdicts/link_matrix.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gdr {

std::string LinkTable::name() const { return test + "_" + transport + "_" + mem + "_" + path + "_" + pattern; }

void LinkMatrices::add(const CaseRecord& r, double algbw_bytes) {
  const CaseParams& c = r.params;
  if (c.has_dtype || c.reference || r.times.empty()) return;
  const std::string pattern = c.pattern.empty() ? "pair" : c.pattern;
  // A rank's time in incast, fanout or neighbor spans several links; in rounds
  // and host-rounds each rank is in one flow of a step.
  if (pattern != "pair" && pattern != "rounds" && pattern != "host-rounds") return;
  std::vector<std::pair<int, int>> links = c.flows;
  if (pattern == "pair") links = {{c.src, c.dst}};
  Key k{c.test, c.transport, std::string(mem_name(c.mem)), std::string(path_name(c.path)), pattern};
  ranks_[k] = r.ranks;
  traits_[k] = c.traits;
  auto& cells = cells_[k][c.bytes];
  // The sender (latency: the initiator) times each link: in `rounds` it is
  // in no other flow of the step, except bibw's reverse flow of its pair.
  for (auto [s, d] : links) {
    if (s < 0 || s >= r.ranks || d < 0 || d >= r.ranks) continue;
    const double t = rank_median(r, s);
    cells.push_back({s, d, t * 1e6, t > 0 ? algbw_bytes / t / 1e9 : std::numeric_limits<double>::quiet_NaN()});
  }
}

std::vector<LinkTable> LinkMatrices::tables() const {
  std::vector<LinkTable> out;
  for (auto& [k, by_size] : cells_) {
    LinkTable t;
    std::tie(t.test, t.transport, t.mem, t.path, t.pattern) = k;
    t.ranks = ranks_.at(k);
    t.test_kind = test_kind_name(traits_.at(k).kind);
    t.directions = traits_.at(k).directions;
    int i = 0;
    for (auto& [bytes, cells] : by_size) {
      t.bytes.push_back(bytes);
      std::map<std::pair<int, int>, std::size_t> at;  // a link measured twice (two --pairs entries) keeps the last
      for (auto& c : cells) {
        auto [it, fresh] = at.try_emplace({c.src, c.dst}, t.src.size());
        if (fresh) {
          t.size.push_back(i);
          t.src.push_back(c.src);
          t.dst.push_back(c.dst);
          t.time_us.push_back(c.time_us);
          t.algbw_gbps.push_back(c.gbps);
        } else {
          t.time_us[it->second] = c.time_us;
          t.algbw_gbps[it->second] = c.gbps;
        }
      }
      ++i;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace gdr
