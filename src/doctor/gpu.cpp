// GPUs through NVML and the CUDA driver, both opened with dlopen: the binary
// must start where neither libnvidia-ml.so.1 nor libcuda.so.1 exists.
//
// The few NVML and CUDA types used are declared here (their ABI is stable),
// so the doctor needs neither nvml.h nor cuda.h to build.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/shared_library.h"
#include "doctor/facts.h"

namespace gdr::doctor::detail {
namespace {

// ---- NVML ---------------------------------------------------------------
using nvmlReturn = int;
using nvmlDevice = void*;
struct nvmlPciInfo {  // nvmlPciInfo_t (v3)
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
  char pad[64];  // room should a later NVML grow the struct
};
struct nvmlBAR1Memory {
  unsigned long long total, free, used;
};
struct nvmlMemory {
  unsigned long long total, free, used;
};

struct Nvml {
  SharedLibrary lib{"libnvidia-ml.so.1"};
  nvmlReturn (*init)() = lib.sym<nvmlReturn (*)()>("nvmlInit_v2");
  nvmlReturn (*shutdown)() = lib.sym<nvmlReturn (*)()>("nvmlShutdown");
  const char* (*error_string)(nvmlReturn) = lib.sym<const char* (*)(nvmlReturn)>("nvmlErrorString");
  nvmlReturn (*driver_version)(char*, unsigned) =
      lib.sym<nvmlReturn (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
  nvmlReturn (*count)(unsigned*) = lib.sym<nvmlReturn (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  nvmlReturn (*handle)(unsigned, nvmlDevice*) =
      lib.sym<nvmlReturn (*)(unsigned, nvmlDevice*)>("nvmlDeviceGetHandleByIndex_v2");
  nvmlReturn (*name)(nvmlDevice, char*, unsigned) =
      lib.sym<nvmlReturn (*)(nvmlDevice, char*, unsigned)>("nvmlDeviceGetName");
  nvmlReturn (*pci)(nvmlDevice, nvmlPciInfo*) =
      lib.sym<nvmlReturn (*)(nvmlDevice, nvmlPciInfo*)>("nvmlDeviceGetPciInfo_v3");
  nvmlReturn (*bar1)(nvmlDevice, nvmlBAR1Memory*) =
      lib.sym<nvmlReturn (*)(nvmlDevice, nvmlBAR1Memory*)>("nvmlDeviceGetBAR1MemoryInfo");
  nvmlReturn (*memory)(nvmlDevice, nvmlMemory*) =
      lib.sym<nvmlReturn (*)(nvmlDevice, nvmlMemory*)>("nvmlDeviceGetMemoryInfo");

  nvmlReturn (*nvlink_state)(nvmlDevice, unsigned, int*) =
      lib.sym<nvmlReturn (*)(nvmlDevice, unsigned, int*)>("nvmlDeviceGetNvLinkState");
  nvmlReturn (*nvlink_version)(nvmlDevice, unsigned, unsigned*) =
      lib.sym<nvmlReturn (*)(nvmlDevice, unsigned, unsigned*)>("nvmlDeviceGetNvLinkVersion");
  nvmlReturn (*ecc)(nvmlDevice, int*, int*) = lib.sym<nvmlReturn (*)(nvmlDevice, int*, int*)>("nvmlDeviceGetEccMode");
  nvmlReturn (*persistence)(nvmlDevice, int*) =
      lib.sym<nvmlReturn (*)(nvmlDevice, int*)>("nvmlDeviceGetPersistenceMode");
  nvmlReturn (*app_clock)(nvmlDevice, int, unsigned*) =
      lib.sym<nvmlReturn (*)(nvmlDevice, int, unsigned*)>("nvmlDeviceGetApplicationsClock");
  std::string err(nvmlReturn r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return s ? fmt::format("{} ({})", s, r) : fmt::format("NVML error {}", r);
  }
};

void probe_nvml(GpuSide& g) {
  Nvml n;
  if (!n.lib) {
    g.nvml_error = "NVML not loadable: " + n.lib.error();
    return;
  }
  if (!n.init || !n.count || !n.handle) {
    g.nvml_error = "libnvidia-ml.so.1 lacks nvmlInit_v2/nvmlDeviceGetCount_v2";
    return;
  }
  if (nvmlReturn r = n.init(); r != 0) {
    g.nvml_error = "nvmlInit: " + n.err(r);
    return;
  }
  g.nvml = true;
  char buf[96] = {};
  if (n.driver_version && n.driver_version(buf, sizeof buf) == 0) g.driver_version = buf;
  unsigned count = 0;
  if (nvmlReturn r = n.count(&count); r != 0) g.nvml_error = "nvmlDeviceGetCount: " + n.err(r);
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice dev = nullptr;
    if (n.handle(i, &dev) != 0) continue;
    GpuFacts f;
    char name[128] = {};
    if (n.name && n.name(dev, name, sizeof name) == 0) f.name = name;
    nvmlPciInfo pci{};
    if (n.pci && n.pci(dev, &pci) == 0) {
      pci.busId[sizeof pci.busId - 1] = '\0';
      f.bus_id = normalize_busid(pci.busId);
      if (f.bus_id.empty())
        f.bus_id = normalize_busid(fmt::format("{:x}:{:x}:{:x}.0", pci.domain, pci.bus, pci.device));
    }
    nvmlBAR1Memory bar1{};
    if (n.bar1 && n.bar1(dev, &bar1) == 0) f.bar1_bytes = static_cast<long long>(bar1.total);
    nvmlMemory mem{};
    if (n.memory && n.memory(dev, &mem) == 0) f.memory_bytes = static_cast<long long>(mem.total);
    // NVLinks: 18 is NVML_NVLINK_MAX_LINKS; a GPU without NVLink answers "not supported".
    if (n.nvlink_state) {
      f.nvlinks = 0;
      for (unsigned l = 0; l < 18; ++l) {
        int active = 0;
        if (n.nvlink_state(dev, l, &active) != 0 || !active) continue;
        unsigned v = 0;
        if (f.nvlinks++ == 0 && n.nvlink_version && n.nvlink_version(dev, l, &v) == 0) f.nvlink_version = static_cast<int>(v);
      }
    }
    // What operators pin per node and a drifted node lacks: ECC, persistence, application clocks
    // (NVML_CLOCK_SM 1, NVML_CLOCK_MEM 2). A GPU that cannot answer stays unknown (-1).
    int cur = 0, pending = 0;
    if (n.ecc && n.ecc(dev, &cur, &pending) == 0) f.ecc = cur ? 1 : 0;
    if (n.persistence && n.persistence(dev, &cur) == 0) f.persistence = cur ? 1 : 0;
    unsigned mhz = 0;
    if (n.app_clock && n.app_clock(dev, 1, &mhz) == 0) f.clock_sm_mhz = static_cast<int>(mhz);
    if (n.app_clock && n.app_clock(dev, 2, &mhz) == 0) f.clock_mem_mhz = static_cast<int>(mhz);
    g.gpus.push_back(std::move(f));
  }
  if (n.shutdown) n.shutdown();
}

// ---- CUDA driver API ----------------------------------------------------------
using CUresult = int;
constexpr int kAttrGpuDirectRdma = 116;  // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
constexpr int kAttrDmaBuf = 124;         // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED

struct Cuda {
  SharedLibrary lib{"libcuda.so.1"};
  CUresult (*init)(unsigned) = lib.sym<CUresult (*)(unsigned)>("cuInit");
  CUresult (*version)(int*) = lib.sym<CUresult (*)(int*)>("cuDriverGetVersion");
  CUresult (*count)(int*) = lib.sym<CUresult (*)(int*)>("cuDeviceGetCount");
  CUresult (*get)(int*, int) = lib.sym<CUresult (*)(int*, int)>("cuDeviceGet");
  CUresult (*attr)(int*, int, int) = lib.sym<CUresult (*)(int*, int, int)>("cuDeviceGetAttribute");
  CUresult (*busid)(char*, int, int) = lib.sym<CUresult (*)(char*, int, int)>("cuDeviceGetPCIBusId");
  CUresult (*name)(char*, int, int) = lib.sym<CUresult (*)(char*, int, int)>("cuDeviceGetName");
  CUresult (*err_name)(CUresult, const char**) =
      lib.sym<CUresult (*)(CUresult, const char**)>("cuGetErrorName");

  std::string err(CUresult r) const {
    const char* s = nullptr;
    if (err_name && err_name(r, &s) == 0 && s) return fmt::format("{} ({})", s, r);
    return fmt::format("CUresult {}", r);
  }
};

void probe_cuda(GpuSide& g) {
  Cuda c;
  if (!c.lib) {
    g.cuda_error = "CUDA driver not loadable: " + c.lib.error();
    return;
  }
  if (!c.init || !c.version || !c.count || !c.get || !c.attr) {
    g.cuda_error = "libcuda.so.1 lacks the driver API entry points";
    return;
  }
  c.version(&g.cuda_driver_version);  // works before cuInit
  if (CUresult r = c.init(0); r != 0) {
    g.cuda_error = "cuInit: " + c.err(r);
    return;
  }
  g.cuda = true;
  int count = 0;
  if (CUresult r = c.count(&count); r != 0) g.cuda_error = "cuDeviceGetCount: " + c.err(r);
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (c.get(&dev, i) != 0) continue;
    char bus[64] = {};
    std::string id;
    if (c.busid && c.busid(bus, sizeof bus, dev) == 0) id = normalize_busid(bus);
    auto it = std::find_if(g.gpus.begin(), g.gpus.end(),
                           [&](const GpuFacts& f) { return !id.empty() && f.bus_id == id; });
    if (it == g.gpus.end()) {  // NVML missing or disagreeing: add what CUDA sees
      GpuFacts f;
      f.bus_id = id;
      char name[128] = {};
      if (c.name && c.name(name, sizeof name, dev) == 0) f.name = name;
      g.gpus.push_back(std::move(f));
      it = g.gpus.end() - 1;
    }
    it->cuda_visible = true;
    int v = 0;
    if (c.attr(&v, kAttrGpuDirectRdma, dev) == 0) it->gdr_attr = v;
    if (c.attr(&v, kAttrDmaBuf, dev) == 0) it->dmabuf_attr = v;
  }
}

void probe_cudart(GpuSide& g) {
  // The runtime gdrbench itself would use; when the binary links cudart the
  // first name returns that same, already loaded copy.
  SharedLibrary rt{"libcudart.so.13", "libcudart.so.12", "libcudart.so",
             "/usr/local/cuda/lib64/libcudart.so"};
  if (!rt) {
    g.cudart_error = "CUDA runtime not loadable: " + rt.error();
    return;
  }
  auto get = rt.sym<int (*)(int*)>("cudaRuntimeGetVersion");
  if (!get || get(&g.cuda_runtime_version) != 0) g.cudart_error = "cudaRuntimeGetVersion failed";
}

}  // namespace

GpuSide probe_gpus(const Options& o) {
  GpuSide g;
  g.module = read_nvidia_module(o);
  g.pci_gpus = nvidia_pci_functions(o);
  if (o.probe_libraries) {
    probe_nvml(g);
    probe_cuda(g);
    probe_cudart(g);
  } else {
    g.nvml_error = g.cuda_error = g.cudart_error = "libraries not probed";
  }
  if (g.driver_version.empty()) g.driver_version = g.module.version;
  std::sort(g.gpus.begin(), g.gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.bus_id < b.bus_id; });
  return g;
}

}  // namespace gdr::doctor::detail
