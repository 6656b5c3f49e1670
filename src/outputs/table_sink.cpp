// The stdout table, nccl-tests style, one row as each case finishes.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "record/case_fields.h"
#include "record/results.h"
#include "core/stats.h"
#include "outputs/redaction.h"

namespace gdr {

namespace {

// A field of src/record/case_fields.h as a cell: numbers with `digits` decimals,
// "-" where the row has none.
std::string cell(const CaseRecord& r, const char* key, int digits = 2) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::int64_t>) return fmt::format("{}", x);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{:.{}f}", x, digits);
        else if constexpr (std::is_same_v<T, std::string>) return x;
        else if constexpr (std::is_same_v<T, bool>) return x ? "1" : "0";
        else return "-";  // Omit, Unknown (flows are in the test cell)
      },
      case_field(key).get(r));
}

class TableSink;
struct Column {
  const char* header;
  int width;
  std::string (*cell)(TableSink&, const CaseRecord&);
};
const std::vector<Column>& columns();

class TableSink final : public ResultSink {
 public:
  void begin(const RunMetadata& m) override {
    fmt::print("# gdrbench {} ({}), {} ranks on {}\n", m.version, m.git_commit, m.ranks,
               host_summary(m));
    fmt::print("# time: mean over iterations of the slowest rank's time (latency: one way); "
               "GB/s = 1e9 B/s\n");
    fmt::print("# algbw = bytes / time; bibw: algbw = 2 x bytes / time (both directions summed, "
               "as osu_bibw); busbw = algbw x 2(n-1)/n for allreduce, = algbw for p2p\n");
    fmt::print("# %peak = busbw / the ceiling of the path the bytes took (bibw: of both directions, of one copy where both share one GPU's memory); "
               "'!' after the path: device bytes went through host memory (a # note says why)\n");
    std::string header;
    for (const Column& col : columns()) header += fmt::format(" {:>{}}", col.header, col.width);
    fmt::print("#{}\n", header.substr(1));
    std::fflush(stdout);
  }
  void add(const CaseRecord& r) override {
    const CaseParams& c = r.params;
    std::string row;
    for (const Column& col : columns()) row += fmt::format(" {:>{}}", col.cell(*this, r), col.width);
    fmt::print("{}\n", row);
    // Each cause once: which rows went through host memory, and why.
    if (r.via_host && noted_.insert(r.via_host_cause).second)
      note(fmt::format("'!' {} over {} ({} memory, {} B and others like it): the bytes went through host "
                       "memory: {}; path: {}",
                       c.test, c.transport, mem_name(c.mem), c.bytes, r.via_host_cause, r.path_taken));
    if (!r.path_unknown.empty() && c.mem != MemKind::host && noted_.insert(r.path_unknown).second)
      note(fmt::format("path unknown for {} over {} ({} memory, {} B and others like it): {}", c.test,
                       c.transport, mem_name(c.mem), c.bytes, r.path_unknown));
    if (r.peak_gbps <= 0 && !r.peak_why.empty() && noted_.insert(r.peak_why).second)
      note(fmt::format("%peak '-' for {} over {} ({} memory): {}", c.test, c.transport, mem_name(c.mem),
                       r.peak_why));
    if (r.peak_gbps > 0 && !r.peak_why.empty() && noted_.insert(r.peak_why).second)
      note(fmt::format("%peak {:.0f} for {} over {} ({} memory, {} B and others like it): {}", r.pct_peak, c.test,
                       c.transport, mem_name(c.mem), c.bytes, r.peak_why));
    std::fflush(stdout);
  }
  void note(const std::string& n) override {
    fmt::print("# note: {}\n", redact(n));
    std::fflush(stdout);
  }
  void end(const RunMetadata& m) override {
    for (auto& v : m.verdict) fmt::print("# verdict: {}\n", redact(v));
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
                           mem_name(c.mem), dtype_label(c), op_label(c), c.bytes, c.src, c.dst) +
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

  friend const std::vector<Column>& columns();
  std::map<std::string, double> direct_, staged_;
  std::set<std::string> noted_;

  static std::string host_summary(const RunMetadata& m) {
    std::vector<std::string> uniq;
    for (auto& h : m.hosts)
      if (std::find(uniq.begin(), uniq.end(), h) == uniq.end()) uniq.push_back(h);
    return uniq.size() == 1 ? uniq[0] : fmt::format("{} hosts", uniq.size());
  }
};

using R = const CaseRecord&;
using T = TableSink&;
// The columns in the table's order; the first one's header starts with '#'.
const std::vector<Column>& columns() {
  static const std::vector<Column> cols = {
      {"size(B)", 12, [](T, R r) { return cell(r, "bytes"); }},
      {"count", 11, [](T, R r) { return cell(r, "count"); }},
      {"type", 8, [](T, R r) { return cell(r, "dtype"); }},
      {"op", 4, [](T, R r) { return cell(r, "op"); }},
      {"test", 9, [](T, R r) {  // latency:0>1, bw@rounds3
         const CaseParams& c = r.params;
         if (!c.pattern.empty()) return fmt::format("{}@{}{}", c.test, c.pattern, c.step);
         return c.src >= 0 ? fmt::format("{}:{}>{}", c.test, c.src, c.dst) : c.test;
       }},
      {"transport", 9, [](T, R r) { return r.params.reference ? r.params.transport + "*" : r.params.transport; }},
      {"mem", 4, [](T, R r) { return cell(r, "mem"); }},
      {"path", 7, [](T, R r) {  // direct/poll, '!' when via host
         return fmt::format("{}{}{}", path_name(r.params.path),
                            r.transport_mode.empty() ? "" : "/" + r.transport_mode, r.via_host ? "!" : "");
       }},
      {"time(us)", 11, [](T, R r) { return cell(r, "time_us_mean"); }},
      {"min(us)", 10, [](T, R r) { return cell(r, "time_us_min"); }},
      {"max(us)", 10, [](T, R r) { return cell(r, "time_us_max"); }},
      {"algbw", 8, [](T, R r) { return cell(r, "algbw_gbps"); }},
      {"busbw", 8, [](T, R r) { return cell(r, "busbw_gbps"); }},
      {"%peak", 6, [](T, R r) { return cell(r, "pct_peak", 1); }},
      {"#wrong", 7, [](T, R r) {  // "-": a collective not checked
         return r.params.check != CheckMode::none || r.params.traits.point_to_point() ? cell(r, "wrong")
                                                                                     : std::string("-");
       }},
      {"d/s", 7, [](T t, R r) { return t.speedup(r); }},
  };
  return cols;
}

}  // namespace

std::unique_ptr<ResultSink> make_table_sink() { return std::make_unique<TableSink>(); }

}  // namespace gdr
