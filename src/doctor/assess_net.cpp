// Judgement of the RDMA side (devices, ports, GIDs, memlock), the topology
// (GPU-HCA distance, ACS, IOMMU) and the library versions. Pure.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/assess.h"

namespace gdr::doctor::detail {
namespace {

bool active(const PortFacts& p) { return p.state == "ACTIVE"; }

// The "devices" row: RDMA devices in sysfs and whether libibverbs can use them.
void devices_check(const RdmaSide& r, std::vector<Check>& out) {
  Check d{"rdma", "devices", "", "", ""};
  std::vector<std::string> names;
  for (const auto& h : r.hcas)
    names.push_back(h.pci.empty() ? h.name + " (software, no PCI device)" : h.name + " " + h.pci);
  if (r.hcas.empty()) {
    d.status = "fail";
    d.evidence = "no RDMA device (/sys/class/infiniband is empty" +
                 std::string(r.verbs ? ", ibv_get_device_list found none)"
                                     : "; " + r.verbs_error + ")");
    d.fix = "load the HCA's driver (ConnectX: `modprobe mlx5_ib`) and install rdma-core and "
            "ibverbs-providers; in a container pass /dev/infiniband in";
  } else if (!r.verbs) {
    d.status = "fail";
    d.evidence = fmt::format("{} in sysfs, but {}", join(names), r.verbs_error);
    d.fix = "install rdma-core's libibverbs1 and ibverbs-providers";
  } else {
    d.status = "pass";
    d.evidence = fmt::format("{} device(s): {}", r.hcas.size(), join(names));
  }
  out.push_back(std::move(d));
}

// An active Ethernet port's GID row: RoCE v2 needs a GID of that type.
void gid_check(const HcaFacts& h, const PortFacts& p, std::vector<Check>& out) {
  Check g{"rdma", fmt::format("{} port {} gid", h.name, p.port), "", "", ""};
  int v2 = preferred_roce_v2_gid(p.gids);
  std::string ndev;
  for (const auto& x : p.gids)
    if (!x.ndev.empty()) ndev = x.ndev;
  if (v2 >= 0) {
    auto it = std::find_if(p.gids.begin(), p.gids.end(), [&](const Gid& x) { return x.index == v2; });
    g.status = "pass";
    g.evidence = fmt::format("RoCE v2 GID index {}: {}{}", v2, it->gid,
                             it->ndev.empty() ? "" : " (" + it->ndev + ")");
  } else if (!p.gids.empty()) {
    g.status = "warn";
    g.evidence = fmt::format("{} GID(s), none RoCE v2", p.gids.size());
    g.fix = "give the netdev an IP address and select RoCE v2 (`cma_roce_mode -d " + h.name +
            " -p " + std::to_string(p.port) + " -m 2`)";
  } else {
    g.status = "fail";
    g.evidence = "no GID: the port's netdev has no address";
    g.fix = "assign an address to the netdev " + (ndev.empty() ? std::string("of the port") : ndev);
  }
  out.push_back(std::move(g));
}

// One port's row. `dev_active`: another port of the same device is active; `any_active`: some
// port of some device is (an idle port is then only a warning).
void port_check(const HcaFacts& h, const PortFacts& p, bool dev_active, bool any_active,
                std::vector<Check>& out) {
  Check c{"rdma", fmt::format("{} port {}", h.name, p.port), "", "", ""};
  c.evidence = fmt::format("{} ({}), {}, MTU {}, {}", p.state.empty() ? "?" : p.state,
                           p.phys_state.empty() ? "?" : p.phys_state,
                           p.link_layer.empty() ? "?" : p.link_layer,
                           p.active_mtu ? std::to_string(p.active_mtu) : "?",
                           p.rate.empty() ? "rate ?" : p.rate);
  if (active(p)) {
    c.status = "pass";
  } else {
    c.fix = p.link_layer == "Ethernet"
                ? "bring the netdev up (`ip link set <dev> up`) and check the cable/switch port"
                : "check the cable and that a subnet manager runs (opensm or the switch's)";
    c.status = dev_active ? "n/a" : any_active ? "warn" : "fail";
    if (dev_active) c.evidence += " (unused port; another port is active)";
  }
  out.push_back(std::move(c));
}

// One device's rows: listed and opened by libibverbs, then each port (and its GID).
void hca_checks(const RdmaSide& r, const HcaFacts& h, bool any_active, std::vector<Check>& out) {
  if (r.verbs && !h.listed) {
    out.push_back({"rdma", h.name, "warn", "in /sys/class/infiniband but not listed by libibverbs",
                   "install the user-space provider for this device (ibverbs-providers)"});
    return;
  }
  if (!h.open_error.empty()) {
    out.push_back({"rdma", h.name, "fail", h.open_error,
                   "check permissions on /dev/infiniband/uverbs*; in a container pass "
                   "/dev/infiniband in"});
    return;
  }
  bool dev_active = std::any_of(h.ports.begin(), h.ports.end(), active);
  for (const auto& p : h.ports) {
    port_check(h, p, dev_active, any_active, out);
    if (p.link_layer == "Ethernet" && active(p)) gid_check(h, p, out);
  }
}

// RLIMIT_MEMLOCK: registering host buffers pins them.
void memlock_check(const RdmaSide& r, std::vector<Check>& out) {
  Check m{"rdma", "memlock", "", "", ""};
  std::string lim = r.memlock_unlimited ? "unlimited" : human_bytes(r.memlock_bytes);
  m.evidence = "ulimit -l: " + lim;
  m.fix = "`ulimit -l unlimited`; persist with `* - memlock unlimited` in /etc/security/limits.d/, "
          "LimitMEMLOCK=infinity for slurmd/systemd, --ulimit memlock=-1 for containers";
  if (r.memlock_unlimited) {
    m.status = "pass";
  } else if (r.cap_ipc_lock) {
    m.status = "pass";
    m.evidence += ", but CAP_IPC_LOCK lifts the limit";
  } else if (r.memlock_bytes >= (1ULL << 30)) {
    m.status = "pass";
    m.evidence += " (registering more pinned host memory than this fails)";
  } else {
    m.status = "warn";
    m.evidence += ": registering host buffers beyond this fails";
  }
  out.push_back(std::move(m));
}

void device_checks(const Facts& f, std::vector<Check>& out) {
  const auto& r = f.rdma;
  devices_check(r, out);
  bool any_active = false;
  for (const auto& h : r.hcas)
    for (const auto& p : h.ports) any_active |= active(p);
  for (const auto& h : r.hcas) hca_checks(r, h, any_active, out);
  memlock_check(r, out);
}

std::vector<std::string> gpu_bdfs(const GpuSide& g) {
  std::vector<std::string> out;
  for (const auto& x : g.gpus)
    if (!x.bus_id.empty()) out.push_back(x.bus_id);
  return out.empty() ? g.pci_gpus : out;
}

// One row per GPU: the PCIe class of its nearest HCA (or why there is none to judge).
void gpu_hca_checks(const Facts& f, std::vector<Check>& out) {
  const auto& t = f.topo;
  auto gpus = gpu_bdfs(f.gpu);
  if (!t.loaded) {
    bool missing = gpus.empty() || t.error.rfind("no ", 0) == 0;
    out.push_back({"topology", "gpu-hca", missing ? "n/a" : "warn",
                   missing ? t.error + ": no GPU-HCA path to judge"
                           : "hwloc could not load the topology: " + t.error,
                   missing ? "" : "check hwloc (HWLOC_* environment, /sys readable)"});
  } else {
    for (size_t i = 0; i < gpus.size(); ++i) {
      const Pairing* best = nullptr;
      std::vector<std::string> all;
      for (const auto& p : t.pairs) {
        if (p.gpu != gpus[i]) continue;
        all.push_back(fmt::format("{} {}", p.hca, to_string(p.cls)));
        if (!best || p.cls < best->cls) best = &p;
      }
      if (!best) continue;
      Check c{"topology", fmt::format("gpu{}", i), "", "", ""};
      c.evidence = fmt::format("{} nearest HCA {} ({}); all: {}", gpus[i], best->hca,
                               to_string(best->cls), join(all));
      switch (best->cls) {
        case PciClass::PIX:
        case PciClass::PXB: c.status = "pass"; break;
        case PciClass::Unknown:
          c.status = "warn";
          c.evidence += ": not found in hwloc's PCI tree";
          c.fix = "check that /sys/bus/pci is visible (containers) and hwloc sees the devices";
          break;
        default:
          c.status = "warn";
          c.evidence += best->cls == PciClass::PHB
                            ? ": traffic crosses the CPU's host bridge"
                            : ": traffic crosses host bridges or the inter-socket link";
          c.fix = "pair each GPU with the HCA under the same PCIe switch (CUDA_VISIBLE_DEVICES, "
                  "UCX_NET_DEVICES, NCCL_IB_HCA), or move the HCA; NCCL disables GPUDirect RDMA "
                  "beyond PXB unless NCCL_NET_GDR_LEVEL says otherwise";
      }
      out.push_back(std::move(c));
    }
  }
}

// ACS P2P redirect on the bridges of the nearest GPU-HCA paths.
void acs_check(const TopoSide& t, std::vector<Check>& out) {
  Check acs{"topology", "acs", "", "", ""};
  std::vector<std::string> redirect, unreadable;
  for (const auto& a : t.acs) {
    if (!a.readable) unreadable.push_back(a.bdf);
    else if (a.present && a.redirect()) redirect.push_back(fmt::format("{} (ctrl {:#06x})", a.bdf, a.control));
  }
  if (!t.loaded) {
    acs.status = "n/a";
    acs.evidence = "no GPU-HCA path";
  } else if (!redirect.empty()) {
    acs.status = "warn";
    acs.evidence = "ACS P2P redirect enabled on " + join(redirect) +
                   ": GPU-HCA traffic is sent up to the root complex";
    acs.fix = "disable ACS redirect on these bridges (BIOS option, or "
              "`setpci -s <bdf> ECAP_ACS+0x6.w=0000` at boot); keep it only where VMs need isolation";
  } else if (!unreadable.empty()) {
    acs.status = "n/a";
    acs.evidence = "config space of " + join(unreadable) + " unreadable (needs root)";
  } else {
    acs.status = "pass";
    acs.evidence = t.acs.empty() ? "no PCI bridge on the nearest GPU-HCA paths"
                                 : fmt::format("no ACS redirect on the {} bridge(s) of the nearest "
                                               "GPU-HCA paths", t.acs.size());
  }
  out.push_back(std::move(acs));
}

// IOMMU translation of the GPUs' and HCAs' DMA.
void iommu_check(const TopoSide& t, std::vector<Check>& out) {
  Check io{"topology", "iommu", "", "", ""};
  std::vector<std::string> translated, seen;
  for (const auto& [bdf, type] : t.iommu_types) {
    if (type.empty()) continue;
    seen.push_back(bdf + " " + type);
    if (type == "DMA" || type == "DMA-FQ") translated.push_back(bdf + " " + type);
  }
  if (t.iommu.empty() && seen.empty()) {
    io.status = "pass";
    io.evidence = "no IOMMU (/sys/class/iommu empty): DMA addresses are not translated";
  } else if (!translated.empty()) {
    io.status = "warn";
    io.evidence = "IOMMU translates DMA for " + join(translated) +
                  ": peer-to-peer goes through the root complex";
    io.fix = "boot with iommu=pt (intel_iommu=on iommu=pt, or amd_iommu=pt) so GPU and HCA use "
             "identity mapping";
  } else if (seen.empty()) {
    io.status = "n/a";
    io.evidence = "IOMMU " + join(t.iommu) + " present; no GPU or HCA to check";
  } else {
    io.status = "pass";
    io.evidence = "IOMMU " + join(t.iommu) + " in passthrough: " + join(seen);
  }
  out.push_back(std::move(io));
}

void topology_checks(const Facts& f, std::vector<Check>& out) {
  gpu_hca_checks(f, out);
  acs_check(f.topo, out);
  iommu_check(f.topo, out);
}

void version_checks(const Facts& f, std::vector<Check>& out) {
  const auto& v = f.versions;
  const auto& r = f.rdma;
  if (r.verbs)
    out.push_back({"versions", "rdma-core", "pass",
                   fmt::format("rdma-core {}, ibv_reg_dmabuf_mr {}",
                               r.rdma_core_version.empty() ? "?" : r.rdma_core_version,
                               r.reg_dmabuf_symbol ? "present" : "missing"),
                   ""});
  else
    out.push_back({"versions", "rdma-core", "n/a", r.verbs_error, "apt install rdma-core libibverbs1"});

  Check u{"versions", "ucx", "", "", ""};
  if (v.ucx_version.empty()) {
    u.status = "n/a";
    u.evidence = v.ucx_error;
  } else if (v.ucx_cuda == 1) {
    u.status = "pass";
    u.evidence = fmt::format("UCX {}, memory types: {}", v.ucx_version, v.ucx_memory_types);
  } else if (v.ucx_cuda == 0 && has_gpu_driver(f)) {
    u.status = "warn";
    u.evidence = fmt::format("UCX {} offers no CUDA memory (memory types: {}){}", v.ucx_version,
                             v.ucx_memory_types, v.ucx_error.empty() ? "" : "; " + v.ucx_error);
    u.fix = "use a UCX built --with-cuda (HPC-X, or the libucx-cu13 wheel) first on "
            "LD_LIBRARY_PATH; until then -T ucx -m cuda needs --path staged";
  } else {
    u.status = "n/a";
    u.evidence = fmt::format("UCX {}, memory types: {}{}", v.ucx_version,
                             v.ucx_memory_types.empty() ? "?" : v.ucx_memory_types,
                             has_gpu_driver(f) ? "" : "; CUDA support cannot show without a GPU driver");
    if (!v.ucx_error.empty()) u.evidence += "; " + v.ucx_error;
  }
  out.push_back(std::move(u));

  Check m{"versions", "mpi", "pass", v.mpi_version.empty() ? "unknown MPI" : v.mpi_version, ""};
  if (v.mpi_cuda == 1) {
    m.evidence += ", CUDA-aware (" + v.mpi_cuda_evidence + ")";
  } else if (v.mpi_cuda == 0) {
    m.status = "warn";
    m.evidence += ", not CUDA-aware (" + v.mpi_cuda_evidence +
                  "; device pointers may still pass through pml ucx with a CUDA-enabled UCX)";
    m.fix = "for -T mpi -m cuda --path direct use an MPI built with CUDA (Open MPI --with-cuda, "
            "HPC-X); --path staged works with any MPI";
  } else {
    m.evidence += ", CUDA-awareness unknown (" + v.mpi_cuda_evidence + ")";
  }
  out.push_back(std::move(m));

  if (v.nccl_version.empty())
    out.push_back({"versions", "nccl", "n/a", v.nccl_error, ""});
  else
    out.push_back({"versions", "nccl", "pass", "NCCL " + v.nccl_version, ""});
}

}  // namespace

void assess_net(const Facts& f, std::vector<Check>& out) {
  device_checks(f, out);
  topology_checks(f, out);
  version_checks(f, out);
}

}  // namespace gdr::doctor::detail
