// The ceilings a run will be measured against, before any run:
// per GPU and per HCA its PCIe link, per RDMA port its rate, per GPU-HCA
// pair the slowest of the three with the pair's PCIe class; and whether
// CUDA MPS runs (ranks sharing a GPU without it time-slice the GPU).
// Informational: status n/a (a number is not a pass or a fail), so the
// verdict and the exit status stay what the readiness checks say.
#include <fmt/format.h>

#include "core/ceiling.h"
#include "doctor/assess.h"
#include "core/mps.h"

namespace gdr::doctor::detail {
namespace {

const LinkFacts* find(const std::vector<std::pair<std::string, LinkFacts>>& v, const std::string& key) {
  for (auto& [k, l] : v)
    if (k == key) return &l;
  return nullptr;
}

std::string shown(const LinkFacts* l) {
  return l && l->gbps > 0 ? l->source : "unknown (no sysfs current_link_speed/width or rate)";
}

}  // namespace

double nvlink_gbps_per_link(int version) {
  switch (version) {
    case 1: return 20;   // P100: 4 links, 80 GB/s per direction
    case 2:
    case 3:
    case 4: return 25;   // V100 6 links, A100 12, H100/H200 18 (450 GB/s per direction)
    case 5: return 50;   // B200: 18 links, 900 GB/s per direction
    default: return 0;
  }
}

CeilingSide probe_ceilings(const Options& o, const std::vector<std::string>& gpus,
                           const std::vector<HcaFacts>& hcas) {
  CeilingSide c;
  auto add_pci = [&](const std::string& bdf, const std::string& what) {
    if (bdf.empty() || find(c.pcie, bdf)) return;
    LinkFacts l{what, 0, {}};
    if (auto p = pcie_ceiling(o.sys_root, bdf, what)) {
      l.gbps = p->gbps;
      l.source = p->source;
    }
    c.pcie.emplace_back(bdf, l);
  };
  for (auto& g : gpus) add_pci(g, "GPU");
  for (auto& h : hcas) {
    add_pci(h.pci, "HCA " + h.name);
    for (auto& p : h.ports) {
      LinkFacts l{fmt::format("{} port {}", h.name, p.port), 0, {}};
      if (double g = port_rate_gbps(p.rate); g > 0) {
        l.gbps = g;
        l.source = fmt::format("{} port {} rate {} (sysfs): {:.2f} GB/s", h.name, p.port, p.rate, g);
      }
      c.ports.emplace_back(fmt::format("{}:{}", h.name, p.port), l);
    }
  }
  if (o.probe_libraries) c.mps_socket = mps_control_socket();
  return c;
}

void assess_ceiling(const Facts& f, std::vector<Check>& out) {
  const CeilingSide& c = f.ceilings;
  for (auto& [bdf, l] : c.pcie)
    out.push_back({"ceiling", fmt::format("{} {}", l.what, bdf), "n/a", shown(&l), ""});
  for (auto& [key, l] : c.ports) out.push_back({"ceiling", l.what, "n/a", shown(&l), ""});
  // NVLink: active links x the per-link rate of their generation, per direction.
  for (auto& g : f.gpu.gpus) {
    if (g.nvlinks <= 0) continue;
    double per = nvlink_gbps_per_link(g.nvlink_version);
    out.push_back({"ceiling", fmt::format("GPU {} NVLink", g.bus_id), "n/a",
                   per > 0 ? fmt::format("{} active links, NVLink {} x {:g} GB/s: {:g} GB/s per direction (NVML)",
                                         g.nvlinks, g.nvlink_version, per, g.nvlinks * per)
                           : fmt::format("{} active links of NVLink version {} (rate unknown)", g.nvlinks,
                                         g.nvlink_version),
                   ""});
  }
  // A GPU-HCA pair: GPUDirect RDMA crosses the GPU's link, the HCA's link and the port.
  for (auto& p : f.topo.pairs) {
    std::string hca_pci;
    for (auto& h : f.rdma.hcas)
      if (h.name == p.hca) hca_pci = h.pci;
    const LinkFacts* best = nullptr;
    auto consider = [&](const LinkFacts* l) {
      if (l && l->gbps > 0 && (!best || l->gbps < best->gbps)) best = l;
    };
    consider(find(c.pcie, p.gpu));
    consider(find(c.pcie, hca_pci));
    for (auto& [key, l] : c.ports)
      if (key.rfind(p.hca + ":", 0) == 0) consider(&l);
    out.push_back({"ceiling", fmt::format("GPU {} - {}", p.gpu, p.hca), "n/a",
                   fmt::format("{}; GPUDirect RDMA at most {}", to_string(p.cls),
                               best ? fmt::format("{:.1f} GB/s ({})", best->gbps, best->what) : "unknown"),
                   ""});
  }
  if (!f.gpu.gpus.empty() || !f.gpu.pci_gpus.empty())
    out.push_back({"ceiling", "mps", "n/a",
                   c.mps_socket.empty()
                       ? "CUDA MPS is not running (no control socket): ranks that share a GPU will time-slice it, "
                         "~150 us per device operation on an H200"
                       : "CUDA MPS is running (" + c.mps_socket + ")",
                   ""});
}

}  // namespace gdr::doctor::detail
