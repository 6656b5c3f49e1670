#include "verdicts/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace gdr {
namespace {

std::string pct(double p, bool known) { return known ? fmt::format("{:.1f} % of peak", p) : "peak unknown"; }

// The doctor's first GPUDirect finding that is not a pass, e.g.
// "doctor: gpudirect/peermem: fail: neither nvidia_peermem nor dma-buf".
std::string doctor_reason(const std::vector<std::pair<std::string, std::string>>& facts) {
  for (auto& [k, v] : facts)
    if (k.find(".gpudirect.") != std::string::npos && (v.rfind("fail", 0) == 0 || v.rfind("warn", 0) == 0))
      return fmt::format("doctor: {}: {}", k.substr(k.find("gpudirect.")), v);
  return {};
}

}  // namespace

// A transport's own library slower than the MPI's path on the same run (UCX's
// host path at 64 MiB: Open MPI uses its shared memory there, not UCX): the
// largest bw size both ran, said with the MPI's figure, when under 0.9x.
std::string Verdict::slower_than_mpi(const Groups& groups, const Key& key, const std::vector<const Row*>& rows) {
  auto& [transport, mem, path] = key;
  auto mpi = groups.find({"mpi", mem, path});
  if (transport == "mpi" || mpi == groups.end()) return {};
  const Row *ours = nullptr, *theirs = nullptr;
  for (auto* r : rows)
    for (auto* m : mpi->second)
      if (one_way_bandwidth(*r) && m->test == r->test && r->bytes == m->bytes && r->src == m->src &&
          (!ours || r->bytes > ours->bytes)) {
        ours = r;
        theirs = m;
      }
  if (!ours || !(theirs->busbw > 0) || ours->busbw >= 0.9 * theirs->busbw) return {};
  return fmt::format("; bw at {} B is {:.2f}x the mpi transport's {:.2f} GB/s in this run: {}'s own library "
                     "is slower there than the MPI's path",
                     ours->bytes, ours->busbw / theirs->busbw, theirs->busbw, transport);
}

void Verdict::add(const CaseRecord& r) {
  const CaseParams& c = r.params;
  if (c.reference || !(r.slowest.mean > 0)) return;
  rows_.push_back({c.test, c.transport, std::string(mem_name(c.mem)), std::string(path_name(c.path)), c.traits, c.bytes,
                   c.src, r.busbw_gbps, r.slowest.mean * 1e6, r.pct_peak, r.peak_gbps > 0, r.via_host,
                   r.via_host_cause, r.path_unknown});
}

std::vector<std::string> Verdict::lines(const std::vector<std::pair<std::string, std::string>>& facts,
                                        const std::string& shared_gpu) const {
  Groups groups;
  for (auto& r : rows_) groups[{r.transport, r.mem, r.path}].push_back(&r);
  std::vector<std::string> out;
  for (auto& [key, rows] : groups) {
    auto& [transport, mem, path] = key;
    const Row* bw = nullptr;
    const Row* lat = nullptr;
    for (auto* r : rows) {
      const bool latency = r->traits.kind == TestKind::latency;
      if (!latency && (!bw || r->busbw > bw->busbw)) bw = r;
      if (latency && (!lat || r->time_us < lat->time_us)) lat = r;
    }
    std::string line = fmt::format("{} {} {}:", transport, mem, path);
    if (bw)
      line += fmt::format(" best {:.2f} GB/s ({} {} B, {})", bw->busbw, bw->test, bw->bytes,
                          pct(bw->pct, bw->has_peak));
    if (lat) line += fmt::format("{} smallest latency {:.2f} us ({} B)", bw ? ";" : "", lat->time_us, lat->bytes);
    line += slower_than_mpi(groups, key, rows);
    if (mem != "host" && path == "direct") {
      // GPUDirect at the largest size run: the bytes stayed off host memory.
      const Row* big = *std::max_element(rows.begin(), rows.end(),
                                         [](auto* a, auto* b) { return a->bytes < b->bytes; });
      if (!big->unknown.empty()) {
        line += fmt::format("; GPUDirect: unknown at {} B ({})", big->bytes, big->unknown);
      } else if (!big->via_host) {
        line += fmt::format("; GPUDirect: yes (no host copy at {} B)", big->bytes);
      } else {
        std::string why = doctor_reason(facts);
        line += fmt::format("; GPUDirect: NO at {} B: {}{}", big->bytes, big->cause, why.empty() ? "" : "; " + why);
      }
    }
    if (mem != "host" && path == "direct") {
      // Direct over staged at the largest size both ran, same test and pair.
      const Row* best = nullptr;
      double factor = 0;
      for (auto* d : rows) {
        auto st = groups.find({transport, mem, "staged"});
        if (st == groups.end()) break;
        for (auto* s : st->second)
          if (s->test == d->test && s->bytes == d->bytes && s->src == d->src && (!best || d->bytes > best->bytes ||
                                                                                 (d->bytes == best->bytes && one_way_bandwidth(*d)))) {
            best = d;
            factor = d->time_us > 0 ? s->time_us / d->time_us : 0;
          }
      }
      if (best) line += fmt::format("; direct/staged {:.2f}x ({} {} B)", factor, best->test, best->bytes);
    }
    out.push_back(line);
  }
  if (!shared_gpu.empty()) out.push_back(shared_gpu);
  return out;
}

}  // namespace gdr
