// Judgement of what GPU-initiated transfers need (area "gpu-initiated"): UCX's device API and
// its device endpoints, and for InfiniBand GPUDirect Async (IBGDA) an mlx5 device with DEVX,
// a way for the HCA to reach GPU memory, the driver's peer-mapping setting and BAR1.
// These transfers are an option beside GPUDirect RDMA, not a condition of it, so no row here
// changes the verdict: a piece that is there passes, a missing or unreadable one is n/a with
// what was seen and, where something can be done, the fix. Pure: facts in, checks out.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/assess.h"

namespace gdr::doctor::detail {
namespace {

void ucx_device_check(const Facts& f, std::vector<Check>& out) {
  const auto& u = f.ucx_device;
  Check c{"gpu-initiated", "ucx device api", "n/a", "", ""};
  if (f.versions.ucx_version.empty() || u.lib_dir.empty()) {
    c.evidence = "unknown: UCX not loaded (" +
                 (f.versions.ucx_error.empty() ? std::string("libucp.so.0") : f.versions.ucx_error) + ")";
    c.fix = "put a UCX with the device API first on LD_LIBRARY_PATH (UCX 1.20 or later built "
            "--with-cuda, e.g. PyPI's libucx-cu13 1.22)";
    out.push_back(std::move(c));
    return;
  }
  std::vector<std::string> eps;
  bool gda = false;
  for (const auto& [tl, file] : u.device_ep) {
    eps.push_back(tl + " (" + file + ")");
    gda |= tl.find("gda") != std::string::npos;
  }
  c.evidence = fmt::format("UCX {} in {}: device API {}; device endpoints: {}; device headers {}",
                           f.versions.ucx_version, u.lib_dir,
                           u.device_api == 1 ? "present (ucp_device_*)"
                                             : u.device_api == 0 ? "absent" : "unknown",
                           eps.empty() ? "none" : join(eps), u.headers ? "installed" : "not installed");
  if (u.device_api != 1) {
    c.fix = "UCX 1.20 or later (the device API, ucp/api/device/), built --with-cuda";
  } else if (eps.empty()) {
    c.fix = "a UCX built --with-cuda (cuda_ipc device endpoints, within a node) and --with-verbs "
            "on mlx5 (its gda module, libuct_ib_mlx5_gda: rc_gda, between nodes)";
  } else if (gda) {
    c.status = "pass";
  } else {
    // cuda_ipc's device endpoint alone proved nothing where it was tried: UCX 1.22's device puts
    // between two processes on one GPU hung ("could not find device lanes"), and UCX's own CI
    // runs its device tests over rc_gda only (results/archive/20261205_h100_ucx-device-api-probe.txt).
    c.evidence += ": cuda_ipc only, whose GPU-initiated puts did not run between two processes on "
                  "one GPU where tried (UCX 1.22: no device lanes); no rc_gda endpoint (between nodes)";
    c.fix = "UCX's rc_gda transport: a UCX built --with-cuda and --with-verbs (module "
            "libuct_ib_mlx5_gda) and an mlx5 HCA";
  }
  out.push_back(std::move(c));
}

void mlx5_devx_check(const Facts& f, std::vector<Check>& out) {
  const auto& g = f.ibgda;
  Check c{"gpu-initiated", "ibgda mlx5 devx", "n/a", "", ""};
  const auto& k = f.kernel;
  bool old_kernel = k.major != 0 && (k.major < 4 || (k.major == 4 && k.minor < 18));
  if (g.mlx5.empty()) {
    c.evidence = "no RDMA device bound to mlx5_core (/sys/class/infiniband/*/device/driver): "
                 "IBGDA needs a ConnectX (mlx5) HCA";
    c.fix = "IBGDA runs on NVIDIA ConnectX-6 or later (mlx5_core and mlx5_ib loaded); other "
            "networks move GPU-initiated transfers through a CPU proxy";
  } else if (!g.mlx5_ib) {
    c.evidence = join(g.mlx5) + " bound to mlx5_core, but mlx5_ib is not loaded (/sys/module)";
    c.fix = "`modprobe mlx5_ib` (the verbs and DEVX interface of mlx5)";
  } else if (old_kernel) {
    c.evidence = fmt::format("{} with mlx5_ib, kernel {} < 4.18 (DEVX arrived in 4.18)", join(g.mlx5),
                             k.release);
    c.fix = "a kernel >= 4.18 or MLNX_OFED/DOCA-OFED's mlx5_ib";
  } else {
    c.status = "pass";
    c.evidence = join(g.mlx5) + " with mlx5_ib" +
                 (k.major ? fmt::format(", kernel {}", k.release) : std::string()) +
                 "; DEVX itself is granted when a process opens the device "
                 "(mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX) and cannot be read from sysfs";
  }
  out.push_back(std::move(c));
}

void ibgda_memory_check(const Facts& f, std::vector<Check>& out) {
  Check c{"gpu-initiated", "ibgda gpu memory", "n/a", "", ""};
  std::string dev, dfix;
  DmaBufState dm = dmabuf_state(f, &dev, &dfix);
  const auto& p = f.peermem;
  if (p.nvidia_peermem || p.nv_peer_mem) {
    c.status = "pass";
    c.evidence = std::string(p.nvidia_peermem ? "nvidia_peermem" : "nv_peer_mem") +
                 " loaded: the HCA can register GPU memory";
  } else if (dm == DmaBufState::Ok) {
    c.status = "pass";
    c.evidence = "dma-buf: " + dev;
  } else {
    c.evidence = "neither nvidia_peermem loaded nor dma-buf confirmed (" + dev + ")";
    std::string dmabuf = dfix.empty() ? "open kernel modules, kernel >= 5.12, rdma-core >= 34" : dfix;
    c.fix = "IBGDA registers GPU memory with the HCA like GPUDirect RDMA: `modprobe "
            "nvidia-peermem`, or dma-buf (" + dmabuf + ")";
  }
  out.push_back(std::move(c));
}

void peer_mapping_check(const Facts& f, std::vector<Check>& out) {
  const auto& g = f.ibgda;
  Check c{"gpu-initiated", "ibgda peer mapping", "n/a", "", ""};
  const char* fix =
      "`options nvidia NVreg_RegistryDwords=\"PeerMappingOverride=1;\"` in /etc/modprobe.d/, "
      "then reload the nvidia modules (or reboot): without it only root may map the HCA's "
      "doorbells into the GPU (NVSHMEM 3.4 and later fall back to CPU-assisted IBGDA)";
  if (g.peer_mapping_override == 1) {
    c.status = "pass";
    c.evidence = fmt::format("PeerMappingOverride set: RegistryDwords \"{}\" ({})", g.registry_dwords,
                             g.registry_source);
  } else if (g.peer_mapping_override == 0) {
    c.evidence = fmt::format("PeerMappingOverride not set: RegistryDwords \"{}\" ({})",
                             g.registry_dwords, g.registry_source);
    c.fix = fix;
  } else {
    c.evidence = "unknown: no /proc/driver/nvidia/params nor nvidia's NVreg_RegistryDwords "
                 "parameter (no NVIDIA driver loaded)";
    if (has_gpu_driver(f)) c.fix = fix;
  }
  out.push_back(std::move(c));
}

void bar1_checks(const Facts& f, std::vector<Check>& out) {
  const auto& g = f.ibgda;
  for (size_t i = 0; i < g.bar1.size(); ++i) {
    const auto& [bdf, bar1] = g.bar1[i];
    Check c{"gpu-initiated", fmt::format("gpu{} bar1", i), "n/a", "", ""};
    long long mem = -1;
    for (const auto& x : f.gpu.gpus)
      if (x.bus_id == bdf) mem = x.memory_bytes;
    if (bar1 < 0) {
      c.evidence = bdf + ": BAR1 unknown (no resource file, or BAR1 unassigned)";
      out.push_back(std::move(c));
      continue;
    }
    c.evidence = fmt::format("{}: BAR1 {} (sysfs resource){}", bdf, human_bytes(bar1),
                             mem > 0 ? ", GPU memory " + human_bytes(mem) : "");
    bool small = mem > 0 ? bar1 < mem : bar1 < (1LL << 30);
    if (small) {
      c.evidence += ": at most that much GPU memory can be exposed to the HCA at once";
      c.fix = "enable large/Resizable BAR in the BIOS so that BAR1 covers the GPU's memory "
              "(NVSHMEM's symmetric heap must fit in it)";
    } else {
      c.status = "pass";
      if (mem <= 0) c.evidence += " (GPU memory unknown without NVML)";
    }
    out.push_back(std::move(c));
  }
}

}  // namespace

void assess_gpu_initiated(const Facts& f, std::vector<Check>& out) {
  ucx_device_check(f, out);
  mlx5_devx_check(f, out);
  ibgda_memory_check(f, out);
  peer_mapping_check(f, out);
  bar1_checks(f, out);
}

}  // namespace gdr::doctor::detail
