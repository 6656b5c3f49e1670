// The host-level schedule (host_rounds.h).
#include "host_rounds.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace gdr::patterns {
namespace {

// Each rank's index among its host's ranks, in rank order.
std::vector<int> local_index(const std::vector<int>& host) {
  std::map<int, int> seen;
  std::vector<int> out;
  for (int h : host) out.push_back(seen[h]++);
  return out;
}

// NIC rails when every rank names a NIC and every host holds the same set
// with one rank per NIC; else empty.
std::vector<int> nic_rails(const std::vector<int>& host, const std::vector<std::string>& nics, int hosts) {
  if (nics.size() != host.size() || std::count(nics.begin(), nics.end(), "") > 0) return {};
  std::vector<std::multiset<std::string>> per(hosts);
  for (std::size_t r = 0; r < host.size(); ++r) per[host[r]].insert(nics[r]);
  for (auto& s : per)
    if (s != per[0] || std::set<std::string>(s.begin(), s.end()).size() != s.size()) return {};
  std::vector<std::string> order(per[0].begin(), per[0].end());
  std::vector<int> out;
  for (auto& n : nics) out.push_back(static_cast<int>(std::find(order.begin(), order.end(), n) - order.begin()));
  return out;
}

}  // namespace

HostMap host_map(const std::vector<std::string>& hostnames, const std::vector<std::string>& nics) {
  HostMap m;
  for (const std::string& h : hostnames) {
    auto it = std::find(m.names.begin(), m.names.end(), h);
    if (it == m.names.end()) it = m.names.insert(m.names.end(), h);
    m.host.push_back(static_cast<int>(it - m.names.begin()));
  }
  m.rail = nic_rails(m.host, nics, m.hosts());
  m.by_nic = !m.rail.empty();
  if (m.rail.empty()) m.rail = local_index(m.host);
  return m;
}

std::string host_rounds_problem(const HostMap& m) {
  if (m.hosts() < 2)
    return fmt::format("--pattern host-rounds needs ranks on 2 or more hosts; all {} ranks are on {}", m.host.size(),
                       m.names.empty() ? "no host" : m.names[0]);
  std::vector<int> count(m.hosts());
  for (int h : m.host) ++count[h];
  for (int h = 1; h < m.hosts(); ++h)
    if (count[h] != count[0])
      return fmt::format("--pattern host-rounds needs the same number of ranks on every host: {} has {}, {} has {} "
                         "(launch with --map-by ppr:N:node or srun --ntasks-per-node)",
                         m.names[0], count[0], m.names[h], count[h]);
  return "";
}

std::vector<std::pair<int, int>> host_pairs(int hosts, int round) { return tournament_round(hosts, round); }

std::vector<Flow> host_round_flows(const HostMap& m, int round) {
  // Each host's ranks by rail: rail i of a meets rail i of b.
  std::vector<std::map<int, int>> by_rail(m.hosts());
  for (int r = 0; r < static_cast<int>(m.host.size()); ++r) by_rail[m.host[r]][m.rail[r]] = r;
  std::vector<Flow> out;
  for (auto [a, b] : host_pairs(m.hosts(), round))
    for (auto [rail, ra] : by_rail[a])
      if (auto it = by_rail[b].find(rail); it != by_rail[b].end()) out.emplace_back(ra, it->second);
  return out;
}

std::string describe_rounds(int hosts, int limit) {
  std::string s;
  for (int r = 0; r < rounds_run(hosts, limit); ++r) {
    if (r) s += "; ";
    bool first = true;
    for (auto [a, b] : host_pairs(hosts, r)) s += fmt::format("{}{}-{}", std::exchange(first, false) ? "" : " ", a, b);
  }
  return s;
}

}  // namespace gdr::patterns
