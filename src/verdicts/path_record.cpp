#include "verdicts/path_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <sstream>

#include "core/ceiling.h"
#include "doctor/facts.h"
#include "memory/memory.h"

namespace gdr {
namespace {

constexpr char kSep = '\x1f';

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (auto& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

bool is_copy_row(const CaseParams& c) { return c.reference && c.transport.rfind("copy-", 0) == 0; }

// The peer this rank moved the case's bytes to, or -1 when it sat out.
int peer_of(const CaseParams& c, int rank, int size) {
  if (c.src >= 0) return rank == c.src ? c.dst : rank == c.dst ? c.src : -1;
  return size > 1 ? (rank + 1) % size : -1;
}

PathTaken local_path(Transport* t, const CaseParams& c, int rank, int size) {
  if (t) {
    int peer = peer_of(c, rank, size);
    return peer >= 0 ? t->path_taken(c.mem, c.bytes, peer) : PathTaken{};
  }
  PathTaken p;
  if (c.transport == "copy-d2h" || c.transport == "copy-h2d") {
    p.how = fmt::format("copy engine: cudaMemcpyAsync {}", c.transport == "copy-d2h" ? "device to pinned host"
                                                                                     : "pinned host to device");
    p.links = {"gpu"};
  } else if (c.transport == "copy-d2d") {
    p.how = "copy engine: cudaMemcpyAsync device to device";
    p.links = {"hbm"};
  }
  return p;
}

std::string gpu_bdf(const CaseParams& c) {
  // "0000:3B:00.0" as CUDA writes it -> sysfs's "0000:3b:00.0".
  MemoryOps* ops = memory_ops(c.mem);
  std::string id = ops ? ops->device_bus_id() : std::string();
  return id.empty() ? id : doctor::detail::normalize_busid(id);
}

// Why a link has no known limit, for the note.
std::string unknown_link(const std::string& l) {
  if (l == "shm") return "host shared memory (memory bandwidth is not read)";
  if (l == "hbm") return "device memory (its bandwidth is not read)";
  if (l == "tcp") return "TCP sockets";
  if (l == "gpu") return "the GPU's PCIe link (no sysfs current_link_* for it)";
  if (l == "copy-d2d") return "a device-to-device copy (no copy-d2d row of this size ran before it; add -R copy-d2d)";
  if (l.rfind("hca:", 0) == 0) return l.substr(4) + " (no sysfs rate)";
  return l;
}

// Clears path_unknown of a device row whose speed rules staging out: its
// per-direction rate above 1.1x the slower host copy of its size measured in
// this run (the copy rows, -R copy-d2h,copy-h2d).
void direct_by_speed(CaseRecord& rec, const CopyCeilings& copies) {
  auto it = copies.find(rec.params.bytes);
  if (it == copies.end()) return;
  auto d2h = it->second.find("copy-d2h"), h2d = it->second.find("copy-h2d");
  if (d2h == it->second.end() || h2d == it->second.end()) return;
  double host = std::min(d2h->second, h2d->second);
  double rate = rec.algbw_gbps / rec.params.traits.directions;  // per direction
  if (host <= 0 || rate <= 1.1 * host) return;
  rec.path_taken += fmt::format("{}direct: {:.1f} GB/s is above what staging through host memory can move "
                                "({:.1f} GB/s, the slower host copy of {} B in this run)",
                                rec.path_taken.empty() ? "" : "; ", rate, host, rec.params.bytes);
  rec.path_unknown.clear();
}

}  // namespace

double busbw_bound(const CaseParams& c, const Ceiling& limit, bool one_device, std::string* why) {
  if (why) why->clear();
  const bool one_memory = one_device && limit.source.rfind("copy-d2d ", 0) == 0;
  if (c.traits.directions < 2 || !one_memory) return c.traits.directions * limit.gbps;
  if (why) *why = "; both directions share one GPU's memory, so the copy's rate bounds them together";
  return limit.gbps;
}

std::string under_half_note(const CaseParams& c, double pct_peak) {
  if (!(pct_peak < 50)) return {};
  if (c.bytes < kPerMessageBound)
    return fmt::format("under half its ceiling: messages under {} KiB are bound by the cost of each message "
                       "(software, synchronisation, latency), not by bandwidth", kPerMessageBound / 1024);
  return "under half its ceiling: unknown why";
}

void note_copy_row(const CaseRecord& rec, CopyCeilings& copies) {
  if (is_copy_row(rec.params) && rec.algbw_gbps > 0)
    copies[rec.params.bytes][rec.params.transport] = rec.algbw_gbps;
}

void record_path(Bootstrap& boot, Transport* t, CaseRecord& rec, const CopyCeilings& copies) {
  const CaseParams& c = rec.params;
  PathTaken p = local_path(t, c, boot.rank(), boot.size());
  std::vector<std::string> unknown;
  Ceiling own = path_ceiling(p.links, "/sys", gpu_bdf(c), {}, &unknown);
  std::string mine = fmt::format("{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}", p.how, kSep, p.via_host ? 1 : 0, kSep,
                                 p.cause, kSep, own.gbps, kSep, own.source, kSep, join(p.links, ","), kSep,
                                 join(unknown, ","), kSep, p.unknown);
  auto all = boot.allgather(std::as_bytes(std::span(mine.data(), mine.size())));
  if (boot.rank() != 0) return;
  std::vector<std::string> hows, links, unknowns;
  Ceiling worst;
  for (auto& bytes : all) {
    auto f = split(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), kSep);
    if (f.size() != 8 || f[0].empty()) continue;
    if (std::find(hows.begin(), hows.end(), f[0]) == hows.end()) hows.push_back(f[0]);
    if (!f[7].empty() && rec.path_unknown.empty()) rec.path_unknown = f[7];
    if (f[1] == "1" && !rec.via_host) {
      rec.via_host = true;
      rec.via_host_cause = f[2];
    }
    double g = std::strtod(f[3].c_str(), nullptr);
    if (g > 0 && (worst.gbps == 0 || g < worst.gbps)) worst = {g, f[4]};
    for (auto& l : split(f[5], ','))
      if (!l.empty() && std::find(links.begin(), links.end(), l) == links.end()) links.push_back(l);
    for (auto& u : split(f[6], ','))
      if (!u.empty() && std::find(unknowns.begin(), unknowns.end(), u) == unknowns.end()) unknowns.push_back(u);
  }
  // p2p: the initiator's view first; ranks that disagree follow.
  rec.path_taken = join(hows, " | ");
  if (hows.empty() && !is_copy_row(c))
    rec.path_unknown = c.reference ? "a library's own collective: its path is not reported"
                                   : fmt::format("the {} transport does not report its path", c.transport);
  // A path that only the bytes' speed can establish: staging device memory
  // through the host moves every byte through a device-to-host and a
  // host-to-device copy, so it cannot beat the slower of the two.
  if (!rec.path_unknown.empty() && !rec.via_host && c.mem != MemKind::host) direct_by_speed(rec, copies);
  // The copy rows of this size measured so far bound the copy links.
  if (auto it = copies.find(c.bytes); it != copies.end()) {
    std::vector<std::string> still;
    Ceiling measured = path_ceiling(links, "", "", it->second, &still);
    if (measured.gbps > 0 && (worst.gbps == 0 || measured.gbps < worst.gbps)) worst = measured;
    std::erase_if(unknowns, [&](const std::string& u) { return it->second.count(u) > 0; });
  }
  // A p2p bandwidth row on host memory through shared memory, whose limit is otherwise unknown:
  // a memcpy of its size class, measured on rank 0 once a run (core/ceiling.h).
  if (c.mem == MemKind::host && c.traits.kind == TestKind::bandwidth && c.traits.point_to_point() &&
      std::find(unknowns.begin(), unknowns.end(), "shm") != unknowns.end()) {
    std::size_t cls = 0;
    const double gbps = host_memcpy_gbps(c.bytes, &cls);
    const Ceiling m = memcpy_ceiling(gbps, cls);
    if (m.gbps > 0) {
      if (worst.gbps == 0 || m.gbps < worst.gbps) worst = m;
      std::erase(unknowns, std::string("shm"));
    }
  }
  rec.peak_gbps = worst.gbps;
  rec.peak_source = worst.source;
  if (worst.gbps > 0) {
    MemoryOps* ops = c.mem == MemKind::host ? nullptr : memory_ops(c.mem);
    std::string shared;
    double bound = busbw_bound(c, worst, ops && ops->ranks_share_device(), &shared);
    rec.peak_source += shared;
    rec.pct_peak = rec.busbw_gbps / bound * 100;
    if (!unknowns.empty())
      rec.peak_source += fmt::format(" (no limit known for {})", join(unknowns, ", "));
    if (std::string why = under_half_note(c, rec.pct_peak); !why.empty()) {
      rec.peak_why = why;
      rec.peak_source += "; " + why;
    }
  } else if (links.empty()) {
    rec.peak_why = c.reference ? "a library's own collective: its path is not reported"
                               : "the transport does not report its path";
  } else {
    std::vector<std::string> why;
    for (auto& u : unknowns.empty() ? links : unknowns) why.push_back(unknown_link(u));
    rec.peak_why = fmt::format("no limit known for {}", join(why, "; "));
  }
}

}  // namespace gdr
