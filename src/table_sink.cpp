// The stdout table, nccl-tests style, one row as each case finishes.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "results.h"
#include "stats.h"

namespace gdr {

namespace {

class TableSink final : public ResultSink {
 public:
  void begin(const RunMetadata& m) override {
    fmt::print("# gdrbench {} ({}), {} ranks on {}\n", m.version, m.git_commit, m.ranks,
               host_summary(m));
    fmt::print("# time: mean over iterations of the slowest rank's time (latency: one way); "
               "GB/s = 1e9 B/s\n");
    fmt::print("# algbw = bytes / time; bibw: algbw = 2 x bytes / time (both directions summed, "
               "as osu_bibw); busbw = algbw x 2(n-1)/n for allreduce, = algbw for p2p\n");
    fmt::print("# %peak = busbw / the ceiling of the path the bytes took (bibw: of both directions); "
               "'!' after the path: device bytes went through host memory (a # note says why)\n");
    fmt::print("#{:>12} {:>11} {:>8} {:>4} {:>9} {:>9} {:>4} {:>7} {:>11} {:>10} {:>10} {:>8} "
               "{:>8} {:>6} {:>7} {:>7}\n",
               "size(B)", "count", "type", "op", "test", "transport", "mem", "path", "time(us)",
               "min(us)", "max(us)", "algbw", "busbw", "%peak", "#wrong", "d/s");
    std::fflush(stdout);
  }
  void add(const CaseRecord& r) override {
    const CaseParams& c = r.params;
    std::string transport = c.reference ? c.transport + "*" : c.transport;
    std::string test = c.src >= 0 ? fmt::format("{}:{}>{}", c.test, c.src, c.dst) : c.test;
    if (!c.pattern.empty()) test = fmt::format("{}@{}{}", c.test, c.pattern, c.step);  // bw@rounds3
    fmt::print(" {:>12} {:>11} {:>8} {:>4} {:>9} {:>9} {:>4} {:>7} {:>11.2f} {:>10.2f} {:>10.2f} "
               "{:>8.2f} {:>8.2f} {:>6} {:>7} {:>7}\n",
               c.bytes, c.count, c.has_dtype ? dtype_name(c.dtype) : "byte",
               c.has_dtype ? op_name(c.op) : "-", test, transport, mem_name(c.mem),
               fmt::format("{}{}{}", path_name(c.path), r.transport_mode.empty() ? "" : "/" + r.transport_mode,
                           r.via_host ? "!" : ""),
               r.slowest.mean * 1e6,
               r.slowest.min * 1e6, r.slowest.max * 1e6, r.algbw_gbps, r.busbw_gbps,
               r.peak_gbps > 0 ? fmt::format("{:.1f}", r.pct_peak) : "-",
               c.check || c.test != "allreduce" ? fmt::format("{}", r.wrong) : "-", speedup(r));
    // Each cause once: which rows went through host memory, and why.
    if (r.via_host && noted_.insert(r.via_host_cause).second)
      note(fmt::format("'!' {} over {} ({} memory, {} B and others like it): the bytes went through host "
                       "memory: {}; path: {}",
                       c.test, c.transport, mem_name(c.mem), c.bytes, r.via_host_cause, r.path_taken));
    if (r.peak_gbps <= 0 && !r.peak_why.empty() && noted_.insert(r.peak_why).second)
      note(fmt::format("%peak '-' for {} over {} ({} memory): {}", c.test, c.transport, mem_name(c.mem),
                       r.peak_why));
    std::fflush(stdout);
  }
  void note(const std::string& n) override {
    fmt::print("# note: {}\n", n);
    std::fflush(stdout);
  }
  void end(const RunMetadata& m) override {
    for (auto& v : m.verdict) fmt::print("# verdict: {}\n", v);
    fmt::print("# {} run ({} ranks); '*' marks a library's own collective (reference row)\n",
               m.status, m.ranks);
  }

 private:
  // Direct over staged for the same case: staged time / direct time, shown
  // on whichever of the two rows comes second.
  std::string speedup(const CaseRecord& r) {
    const CaseParams& c = r.params;
    if (c.mem == MemKind::host) return "-";
    auto key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", c.test, c.transport, c.reference,
                           mem_name(c.mem), c.has_dtype ? dtype_name(c.dtype) : "byte",
                           c.has_dtype ? op_name(c.op) : "", c.bytes, c.src, c.dst) +
               fmt::format("|{}|{}", c.pattern, c.step);
    double& mine = (c.path == Path::direct ? direct_ : staged_)[key];
    mine = r.slowest.mean;
    auto& other_map = c.path == Path::direct ? staged_ : direct_;
    auto other = other_map.find(key);
    if (other == other_map.end() || !(mine > 0) || !(other->second > 0)) return "-";
    double direct = c.path == Path::direct ? mine : other->second;
    double staged = c.path == Path::direct ? other->second : mine;
    return fmt::format("{:.2f}", staged / direct);
  }

  std::map<std::string, double> direct_, staged_;
  std::set<std::string> noted_;

  static std::string host_summary(const RunMetadata& m) {
    std::vector<std::string> uniq;
    for (auto& h : m.hosts)
      if (std::find(uniq.begin(), uniq.end(), h) == uniq.end()) uniq.push_back(h);
    return uniq.size() == 1 ? uniq[0] : fmt::format("{} hosts", uniq.size());
  }
};

}  // namespace

std::unique_ptr<ResultSink> make_table_sink() { return std::make_unique<TableSink>(); }

}  // namespace gdr
