// Judgement of the GPU side: driver, CUDA, each GPU, and the two ways an HCA
// can reach GPU memory (nvidia_peermem, dma-buf). Pure: facts in, checks out.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "doctor/assess.h"

namespace gdr::doctor::detail {

bool has_gpu_driver(const Facts& f) { return f.gpu.nvml || f.gpu.cuda || f.gpu.module.loaded; }

DmaBufState dmabuf_state(const Facts& f, std::string* evidence, std::string* fix) {
  std::vector<std::string> ev, fx;
  bool no = false, unknown = false;
  // GPU side
  int gpus = 0, yes = 0;
  for (const auto& g : f.gpu.gpus) {
    if (g.dmabuf_attr < 0) continue;
    ++gpus;
    yes += g.dmabuf_attr == 1;
  }
  const char* flavor = f.gpu.module.open_module == 1   ? ", open kernel module"
                       : f.gpu.module.open_module == 0 ? ", proprietary kernel module"
                                                       : "";
  if (gpus == 0) {
    unknown = true;
    ev.push_back("GPU: DMA_BUF_SUPPORTED not readable (no CUDA device)");
  } else {
    ev.push_back(fmt::format("GPU: DMA_BUF_SUPPORTED=1 on {}/{} (driver {}{})", yes, gpus,
                             f.gpu.driver_version.empty() ? "?" : f.gpu.driver_version, flavor));
    if (yes == 0) {
      no = true;
      fx.push_back("use the NVIDIA open kernel modules (nvidia-open, driver 515 or later; "
                   "the proprietary flavor exports no dma-buf)");
    }
  }
  // Kernel: ib_umem_dmabuf arrived in 5.12.
  const auto& k = f.kernel;
  if (k.major == 0) {
    unknown = true;
    ev.push_back("kernel: release unknown");
  } else {
    bool ok = k.major > 5 || (k.major == 5 && k.minor >= 12);
    ev.push_back(fmt::format("kernel {} {}", k.release, ok ? ">= 5.12" : "< 5.12"));
    if (!ok) {
      no = true;
      fx.push_back("a kernel >= 5.12 (RDMA dma-buf MRs)");
    }
  }
  // rdma-core: ibv_reg_dmabuf_mr arrived in rdma-core 34.
  if (!f.rdma.verbs) {
    unknown = true;
    ev.push_back("rdma-core: libibverbs not loaded");
  } else {
    ev.push_back(fmt::format("rdma-core {}: ibv_reg_dmabuf_mr {}",
                             f.rdma.rdma_core_version.empty() ? "?" : f.rdma.rdma_core_version,
                             f.rdma.reg_dmabuf_symbol ? "present" : "missing"));
    if (!f.rdma.reg_dmabuf_symbol) {
      no = true;
      fx.push_back("rdma-core 34 or later");
    }
  }
  // HCA side: the side-effect-free probe.
  std::vector<std::string> hy, hn;
  for (const auto& h : f.rdma.hcas) {
    if (h.dmabuf_mr == 1) hy.push_back(h.name);
    if (h.dmabuf_mr == 0) hn.push_back(h.name + " (" + h.dmabuf_evidence + ")");
  }
  if (!hy.empty()) {
    ev.push_back("HCA accepts dma-buf MRs: " + join(hy));
  } else if (!hn.empty()) {
    no = true;
    ev.push_back("HCA refuses dma-buf MRs: " + join(hn));
    fx.push_back("an HCA driver with dma-buf MRs (mlx5 from kernel 5.12, efa, irdma; "
                 "Soft-RoCE cannot)");
  } else {
    unknown = true;
    ev.push_back("HCA: no RDMA device to probe");
  }
  if (evidence) *evidence = join(ev, "; ");
  if (fix) *fix = fx.empty() ? "" : "dma-buf needs " + join(fx, "; ");
  if (no) return DmaBufState::No;
  return unknown ? DmaBufState::Likely : DmaBufState::Ok;
}

static void driver_check(const Facts& f, std::vector<Check>& out) {
  const auto& g = f.gpu;
  Check c{"gpu", "driver", "", "", ""};
  const char* flavor = g.module.open_module == 1   ? ", open kernel module"
                       : g.module.open_module == 0 ? ", proprietary kernel module"
                                                   : "";
  if (g.nvml && !g.gpus.empty()) {
    c.status = "pass";
    c.evidence = fmt::format("NVIDIA driver {}{}, {} GPU(s) seen by NVML", g.driver_version,
                             flavor, g.gpus.size());
  } else if (g.nvml) {
    c.status = "fail";
    c.evidence = fmt::format("NVIDIA driver {}{} loaded but NVML sees no GPU{}", g.driver_version,
                             flavor, g.nvml_error.empty() ? "" : ": " + g.nvml_error);
    c.fix = "check `nvidia-smi`; in a container pass the GPUs in (--gpus all)";
  } else if (g.module.loaded) {
    c.status = "fail";
    c.evidence = fmt::format("kernel module nvidia {} loaded but NVML unusable: {}",
                             g.module.version, g.nvml_error);
    c.fix = "install the user-space driver libraries matching the kernel module "
            "(libnvidia-ml.so.1 and libcuda.so.1 of the same version)";
  } else if (!g.pci_gpus.empty()) {
    c.status = "fail";
    c.evidence = fmt::format("NVIDIA GPU(s) on PCI ({}) but no driver loaded: {}",
                             join(g.pci_gpus), g.nvml_error);
    c.fix = "install the NVIDIA data-center driver (open kernel modules, e.g. nvidia-open) "
            "and load it (`modprobe nvidia` or reboot)";
  } else {
    c.status = "fail";
    c.evidence = "no NVIDIA GPU: none on the PCI bus, no nvidia kernel module, " + g.nvml_error;
    c.fix = "run on a GPU node (in a container: --gpus all with nvidia-container-toolkit); "
            "without a GPU only -m host runs";
  }
  out.push_back(std::move(c));
}

static void cuda_check(const Facts& f, std::vector<Check>& out) {
  const auto& g = f.gpu;
  Check c{"gpu", "cuda", "", "", ""};
  std::string rt = g.cuda_runtime_version
                       ? "runtime " + cuda_version_string(g.cuda_runtime_version)
                       : "runtime not found (" + g.cudart_error + ")";
  if (g.cuda) {
    int visible = static_cast<int>(
        std::count_if(g.gpus.begin(), g.gpus.end(), [](const GpuFacts& x) { return x.cuda_visible; }));
    c.evidence = fmt::format("CUDA driver {}, {}, {} device(s) visible",
                             cuda_version_string(g.cuda_driver_version), rt, visible);
    if (g.cuda_runtime_version > g.cuda_driver_version) {
      c.status = "fail";
      c.evidence += ": the runtime is newer than the driver";
      c.fix = "upgrade the NVIDIA driver to one that supports CUDA " +
              cuda_version_string(g.cuda_runtime_version) + ", or install cuda-compat";
    } else if (visible == 0) {
      c.status = "fail";
      const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
      c.evidence += cvd ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", cvd) : "";
      c.fix = "check CUDA_VISIBLE_DEVICES and the job's GPU allocation";
    } else {
      c.status = "pass";
    }
  } else if (!has_gpu_driver(f) && g.pci_gpus.empty()) {
    c.status = "n/a";
    c.evidence = "no GPU driver: " + g.cuda_error + "; " + rt;
  } else {
    c.status = "fail";
    c.evidence = g.cuda_error + "; " + rt;
    c.fix = "libcuda.so.1 ships with the NVIDIA driver (libnvidia-compute / nvidia-driver-libs): "
            "install the one matching the kernel module; check /dev/nvidia* permissions";
  }
  out.push_back(std::move(c));
}

static void gpu_rows(const Facts& f, std::vector<Check>& out) {
  const auto& g = f.gpu;
  for (size_t i = 0; i < g.gpus.size(); ++i) {
    const auto& x = g.gpus[i];
    Check c{"gpu", fmt::format("gpu{}", i), "", "", ""};
    auto attr = [](int v) { return v < 0 ? std::string("?") : std::to_string(v); };
    c.evidence = fmt::format("{}, {}, memory {}, BAR1 {}, GPUDirectRDMASupported={}, "
                             "DMA_BUF_SUPPORTED={}",
                             x.name.empty() ? "?" : x.name, x.bus_id.empty() ? "?" : x.bus_id,
                             x.memory_bytes < 0 ? "?" : human_bytes(x.memory_bytes),
                             x.bar1_bytes < 0 ? "?" : human_bytes(x.bar1_bytes), attr(x.gdr_attr),
                             attr(x.dmabuf_attr));
    if (x.gdr_attr == 0) {
      c.status = "fail";
      c.fix = "this GPU cannot do GPUDirect RDMA (consumer GPUs cannot): use a data-center GPU, "
              "or --path staged";
    } else if (x.gdr_attr < 0) {
      c.status = "warn";
      c.evidence += g.cuda ? " (not visible to CUDA)" : " (CUDA driver API unavailable)";
      c.fix = "make the GPU visible to CUDA (CUDA_VISIBLE_DEVICES, libcuda.so.1)";
    } else if (x.bar1_bytes >= 0 && x.bar1_bytes < (1LL << 30)) {
      c.status = "warn";
      c.evidence += ": at most that much GPU memory can be registered for RDMA at once";
      c.fix = "enable large BAR / Resizable BAR in the BIOS, or use --path staged for large "
              "buffers on this GPU";
    } else {
      c.status = "pass";
    }
    out.push_back(std::move(c));
  }
}

static void gpudirect_checks(const Facts& f, std::vector<Check>& out) {
  const auto& p = f.peermem;
  std::string dev, dfix;
  DmaBufState dm = dmabuf_state(f, &dev, &dfix);
  bool peer = p.nvidia_peermem || p.nv_peer_mem;
  bool driver = has_gpu_driver(f);

  Check pm{"gpudirect", "nvidia_peermem", "", "", ""};
  std::string peers = p.memory_peers.empty() ? "" : "; memory peers: " + join(p.memory_peers);
  if (peer) {
    pm.status = "pass";
    pm.evidence = std::string(p.nvidia_peermem ? "nvidia_peermem" : "nv_peer_mem") +
                  " loaded" + peers;
  } else {
    pm.evidence = "neither nvidia_peermem nor nv_peer_mem loaded (/sys/module)" + peers;
    pm.fix = "`modprobe nvidia-peermem` (ships with the driver; needs MLNX_OFED's peer-memory "
             "API, so with inbox rdma-core use dma-buf instead); persist it in "
             "/etc/modules-load.d/";
    if (!driver) {
      pm.status = "n/a";
      pm.evidence += "; no GPU driver";
    } else if (dm != DmaBufState::No) {
      pm.status = "n/a";
      pm.evidence += dm == DmaBufState::Ok ? "; not needed: dma-buf works"
                                           : "; not needed if the HCA takes dma-buf MRs";
    } else {
      pm.status = "fail";
    }
  }
  out.push_back(std::move(pm));

  Check db{"gpudirect", "dma-buf", "", dev, dfix};
  if (dm == DmaBufState::Ok) db.status = "pass";
  else if (!driver) db.status = "n/a";
  else if (dm == DmaBufState::Likely) db.status = "n/a";
  else db.status = peer ? "n/a" : "fail";
  out.push_back(std::move(db));
}

void assess_gpu(const Facts& f, std::vector<Check>& out) {
  driver_check(f, out);
  cuda_check(f, out);
  gpu_rows(f, out);
  gpudirect_checks(f, out);
}

}  // namespace gdr::doctor::detail
