// collect_local: gather the facts of this node, judge them, give a verdict.
#include <fmt/format.h>
#include <unistd.h>

#include <climits>

#include "doctor/assess.h"

namespace gdr::doctor {
namespace detail {

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string human_bytes(unsigned long long b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", b);
  return v == static_cast<double>(static_cast<long long>(v)) ? fmt::format("{:.0f} {}", v, units[u])
                                                             : fmt::format("{:.1f} {}", v, units[u]);
}

std::string cuda_version_string(int v) {
  if (v <= 0) return "?";
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

std::string hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

Facts gather(const Options& o) {
  Facts f;
  f.host = hostname();
  f.kernel = read_kernel(o);
  f.gpu = probe_gpus(o);
  f.peermem = detect_peermem(o);
  f.rdma = probe_rdma(o);
  std::vector<std::string> gpus;
  for (const auto& g : f.gpu.gpus)
    if (!g.bus_id.empty()) gpus.push_back(g.bus_id);
  if (gpus.empty()) gpus = f.gpu.pci_gpus;
  f.topo = probe_topology(o, gpus, f.rdma.hcas);
  f.versions = probe_versions(o);
  f.ceilings = probe_ceilings(o, gpus, f.rdma.hcas);
  f.ucx_device = read_ucx_device(f.versions.ucx_lib_dir, f.versions.ucx_device_api_symbol);
  f.ibgda = read_ibgda(o, f.gpu.pci_gpus);
  return f;
}

std::vector<Check> assess(const Facts& f) {
  std::vector<Check> out;
  assess_gpu(f, out);
  assess_net(f, out);
  assess_ceiling(f, out);
  assess_gpu_initiated(f, out);
  return out;
}

}  // namespace detail

std::string verdict_of(const std::vector<Check>& checks) {
  bool warn = false;
  for (const auto& c : checks) {
    if (c.status == "fail") return "not ready";
    warn |= c.status == "warn";
  }
  return warn ? "degraded" : "ready";
}

int exit_code(const Report& r) {
  if (r.verdict == "ready") return kExitReady;
  if (r.verdict == "degraded") return kExitDegraded;
  return kExitNotReady;
}

int exit_code(const std::vector<Report>& reports) {
  int worst = kExitReady;
  for (const auto& r : reports) {
    int c = exit_code(r);
    if (c == kExitNotReady || (c == kExitDegraded && worst == kExitReady)) worst = c;
  }
  return worst;
}

Report collect_local(const Options& o) {
  Report r;
  if (o.counters_only) {  // no checks: the verdict of none, "ready"
    r.host = detail::hostname();
    r.verdict = verdict_of(r.checks);
    detail::read_inventory(o, nullptr, nullptr, r.config, r.counters);
    return r;
  }
  detail::Facts f = detail::gather(o);
  r.host = f.host;
  r.checks = detail::assess(f);
  r.verdict = verdict_of(r.checks);
  detail::read_inventory(o, &f.gpu, &f.rdma, r.config, r.counters);
  return r;
}

Report collect_local() { return collect_local(Options{}); }

}  // namespace gdr::doctor
