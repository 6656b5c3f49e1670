// Internal to the doctor: what the probes saw (Facts), and the pure function
// that turns facts into checks (assess). Probes touch the machine; assess
// does not, so the judgement is unit-tested on hand-made facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor.h"

namespace gdr::doctor::detail {

// ---- sysfs / procfs (sysfs.cpp) -------------------------------------------
std::string join_path(const std::string& root, const std::string& rel);
std::optional<std::string> read_line(const std::string& path);  // first line, trimmed
std::vector<std::string> list_dir(const std::string& path);     // sorted, no . ..
bool exists(const std::string& path);
// PCI bus id a sysfs device link points to (walking up past non-PCI parents), "" if none.
std::string pci_of_link(const std::string& link);
// "00000000:3B:00.0" or "3b:00.0" -> "0000:3b:00.0"; "" if not a bus id.
std::string normalize_busid(const std::string& id);

struct PeerMemFacts {
  bool nvidia_peermem = false;  // /sys/module/nvidia_peermem
  bool nv_peer_mem = false;     // /sys/module/nv_peer_mem (Mellanox's older module)
  std::vector<std::string> memory_peers;  // /sys/kernel/mm/memory_peers/* (MLNX_OFED API)
};
PeerMemFacts detect_peermem(const Options& o);

struct Gid {
  int index = 0;
  std::string gid;   // as in sysfs, "fe80:0000:..."
  std::string type;  // "IB/RoCE v1" | "RoCE v2" | ""
  std::string ndev;  // netdev, may be empty
};
// Non-zero GIDs of <sys>/class/infiniband/<dev>/ports/<port>.
std::vector<Gid> read_gids(const Options& o, const std::string& dev, int port);
// Index of the GID to use for RoCE v2 (IPv4-mapped first, then any), or -1.
int preferred_roce_v2_gid(const std::vector<Gid>& gids);

struct PortFacts {
  int port = 0;
  std::string state;       // "ACTIVE" (from "4: ACTIVE")
  std::string phys_state;  // "LinkUp"
  std::string link_layer;  // "InfiniBand" | "Ethernet"
  std::string rate;        // "100 Gb/sec (4X EDR)"
  int active_mtu = 0;      // bytes, 0 unknown (only libibverbs knows it)
  std::vector<Gid> gids;
};
struct HcaFacts {
  std::string name;
  std::string pci;  // bus id, "" for software devices (rxe, siw)
  std::vector<PortFacts> ports;
  bool listed = false;      // ibv_get_device_list returned it
  std::string open_error;  // ibv_open_device failure
  int dmabuf_mr = -1;      // kernel+provider accept dma-buf MRs: 1 yes, 0 no, -1 unknown
  std::string dmabuf_evidence;
};
std::vector<std::string> rdma_device_names(const Options& o);
HcaFacts read_hca_sysfs(const Options& o, const std::string& dev);

// NVIDIA display/3D controllers on the PCI bus (vendor 0x10de, class 0x03xx).
std::vector<std::string> nvidia_pci_functions(const Options& o);

struct AcsFacts {
  std::string bdf;
  bool readable = false;  // config space beyond 256 bytes could be read
  bool present = false;   // ACS extended capability found
  uint16_t control = 0;
  bool redirect() const { return (control & 0x000c) != 0; }  // P2P RR or CR
};
AcsFacts read_acs(const Options& o, const std::string& bdf);
// ACS parsing of a raw config-space image (exposed for tests).
AcsFacts parse_acs(const std::string& bdf, const std::string& config);

// "identity", "DMA", "DMA-FQ", "blocked", ... or "" when no IOMMU group.
std::string iommu_group_type(const Options& o, const std::string& bdf);
std::vector<std::string> iommu_units(const Options& o);  // /sys/class/iommu/*

struct KernelFacts {
  std::string release;  // "6.1.0-57-amd64"
  int major = 0, minor = 0;
};
KernelFacts read_kernel(const Options& o);

// NVIDIA kernel driver as procfs/sysfs see it (no NVML needed).
struct NvidiaModuleFacts {
  bool loaded = false;       // /sys/module/nvidia
  std::string version;       // /sys/module/nvidia/version
  int open_module = -1;      // /proc/driver/nvidia/version says "Open Kernel Module"
};
NvidiaModuleFacts read_nvidia_module(const Options& o);

// ---- GPUs (gpu.cpp) ---------------------------------------------------------
struct GpuFacts {
  std::string bus_id;  // normalized
  std::string name;
  long long bar1_bytes = -1;
  long long memory_bytes = -1;
  bool cuda_visible = false;
  int gdr_attr = -1;     // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
  int dmabuf_attr = -1;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  int nvlinks = -1;        // active NVLinks (nvmlDeviceGetNvLinkState), -1 unknown
  int nvlink_version = 0;  // nvmlDeviceGetNvLinkVersion of the first active link
  int ecc = -1;            // nvmlDeviceGetEccMode (current): 1 on, 0 off, -1 unknown
  int persistence = -1;    // nvmlDeviceGetPersistenceMode: 1 on, 0 off, -1 unknown
  int clock_sm_mhz = -1;   // nvmlDeviceGetApplicationsClock (SM), -1 unknown
  int clock_mem_mhz = -1;  // the same for the memory clock
};
// GB/s per direction of one NVLink of `version` (NVML's numbering: 1 P100,
// 2 V100, 3 A100, 4 H100/H200, 5 B200), 0 unknown.
double nvlink_gbps_per_link(int version);
struct GpuSide {
  NvidiaModuleFacts module;
  std::vector<std::string> pci_gpus;  // from sysfs
  bool nvml = false;
  std::string nvml_error;
  std::string driver_version;  // "580.159.04"
  bool cuda = false;
  std::string cuda_error;
  int cuda_driver_version = 0;   // 13000
  int cuda_runtime_version = 0;  // 13000, 0 when libcudart was not found
  std::string cudart_error;
  std::vector<GpuFacts> gpus;
};
GpuSide probe_gpus(const Options& o);

// ---- RDMA (rdma.cpp) ---------------------------------------------------------
struct RdmaSide {
  bool verbs = false;  // libibverbs.so.1 loaded
  std::string verbs_error;
  std::string rdma_core_version;  // "44.0" from the library's file name
  bool reg_dmabuf_symbol = false;  // libibverbs exports ibv_reg_dmabuf_mr
  std::vector<HcaFacts> hcas;
  // RLIMIT_MEMLOCK
  bool memlock_unlimited = false;
  unsigned long long memlock_bytes = 0;
  bool cap_ipc_lock = false;  // CAP_IPC_LOCK in /proc/self/status CapEff
};
RdmaSide probe_rdma(const Options& o);
bool has_cap_ipc_lock(const Options& o);

// ---- topology (topology.cpp) -------------------------------------------------
enum class PciClass { PIX, PXB, PHB, NODE, SYS, Unknown };
const char* to_string(PciClass c);

struct Pairing {
  std::string gpu, hca;  // hca: device name
  PciClass cls = PciClass::Unknown;
  std::vector<std::string> bridges;  // PCI-PCI bridges on the path (bus ids)
};
struct TopoSide {
  bool loaded = false;
  std::string error;
  std::vector<Pairing> pairs;      // every GPU x every HCA with a PCI address
  std::vector<AcsFacts> acs;       // bridges on the nearest paths
  std::vector<std::string> iommu;  // IOMMU units
  std::vector<std::pair<std::string, std::string>> iommu_types;  // bdf -> type
};
// Loads the topology (live, or o.topology_xml) once and classifies.
class Topology {
 public:
  explicit Topology(const std::string& xml_path);  // "" = live machine
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  bool ok() const { return topo_ != nullptr; }
  const std::string& error() const { return error_; }
  bool has_pci(const std::string& bdf) const;
  // PCIe relation of two PCI functions, and the PCI-PCI bridges in between.
  PciClass classify(const std::string& a, const std::string& b,
                    std::vector<std::string>* bridges = nullptr) const;
  // The RDMA NIC (OpenFabrics device) local to this process's CPU binding: the one whose
  // nearest CPU-side ancestor (package, NUMA node) holds the binding, when exactly one does.
  // "" otherwise, with `why`. Rails for host-rounds where no variable binds a rank to a NIC.
  std::string nic_near_binding(std::string& why) const;
  // The RDMA NIC nearest in PCIe to the PCI function `bdf` (this rank's GPU): the one of the
  // closest class, when exactly one is that close and the class is at most PHB (a switch or a
  // root complex in common), as a rail-aligned server pairs each GPU with its NIC. "" otherwise,
  // with `why`.
  std::string nic_near_pci(const std::string& bdf, std::string& why) const;

 private:
  void* topo_ = nullptr;
  std::string error_;
};
TopoSide probe_topology(const Options& o, const std::vector<std::string>& gpus,
                        const std::vector<HcaFacts>& hcas);

// ---- versions (versions.cpp) -----------------------------------------------------
struct VersionSide {
  std::string ucx_version;  // "" not found
  std::string ucx_error;
  int ucx_cuda = -1;  // UCP memory types include CUDA: 1 yes, 0 no, -1 unknown
  std::string ucx_memory_types;
  std::string mpi_version;
  int mpi_cuda = -1;  // CUDA-aware: 1 yes, 0 no, -1 unknown
  std::string mpi_cuda_evidence;
  std::string nccl_version;  // "" not found
  std::string nccl_error;
  std::string ucx_lib_dir;         // folder of the libucp.so.0 that loaded, "" when none did
  int ucx_device_api_symbol = -1;  // libucp exports ucp_device_remote_mem_list_create: 1/0/-1
};
VersionSide probe_versions(const Options& o);
// "libibverbs.so.1.14.44.0" -> "44.0"
std::string rdma_core_from_soname(const std::string& file);

// ---- ceilings (assess_ceiling.cpp) ------------------------------------------
struct LinkFacts {
  std::string what;   // "GPU 0000:3b:00.0", "HCA mlx5_0", "mlx5_0 port 1"
  double gbps = 0;    // 0: unknown
  std::string source; // src/core/ceiling.h's description
};
struct CeilingSide {
  std::vector<std::pair<std::string, LinkFacts>> pcie;   // bus id -> its PCIe link
  std::vector<std::pair<std::string, LinkFacts>> ports;  // "mlx5_0:1" -> port rate
  std::string mps_socket;  // CUDA MPS control socket, "" when none
};
CeilingSide probe_ceilings(const Options& o, const std::vector<std::string>& gpus,
                           const std::vector<HcaFacts>& hcas);

// ---- GPU-initiated transfers (gpu_initiated.cpp) ----------------------------------
// What UCX's device API (a CUDA kernel posting ucp_device_put) needs from the UCX build.
struct UcxDeviceFacts {
  std::string lib_dir;    // folder of libucp.so.0; "" when UCX did not load
  int device_api = -1;    // libucp exports the device API (ucp_device_*): 1 yes, 0 no, -1 unknown
  bool headers = false;   // <lib_dir>/../include/ucp/api/device/ucp_device_impl.h (to build kernels)
  // Transports whose module exports uct_<tl>_ep_get_device_ep (cuda_ipc, rc_gda, ...), with the
  // module file: read from the files' dynamic symbol names, not by dlopen (libuct_cuda needs
  // libcuda.so.1, which a node without a driver lacks).
  std::vector<std::pair<std::string, std::string>> device_ep;  // transport -> module file name
};
UcxDeviceFacts read_ucx_device(const std::string& lib_dir, int device_api_symbol);
// The transport names behind "uct_<tl>_ep_get_device_ep" in a module's bytes (uct_rc_gdaki_...
// is the rc_gda transport's), sorted (exposed for tests).
std::vector<std::string> device_ep_symbols(const std::string& bytes);

// InfiniBand GPUDirect Async (IBGDA: the GPU rings the NIC's doorbell itself).
struct IbgdaFacts {
  std::vector<std::string> mlx5;  // RDMA devices bound to mlx5_core (device/driver link)
  bool mlx5_ib = false;           // /sys/module/mlx5_ib (DEVX lives in it)
  int peer_mapping_override = -1;  // NVreg_RegistryDwords holds PeerMappingOverride=1: 1, else 0;
                                   // -1 unreadable
  std::string registry_dwords;     // the value as read
  std::string registry_source;     // the file it came from
  std::vector<std::pair<std::string, long long>> bar1;  // GPU bus id -> BAR1 bytes (sysfs), -1 unknown
};
IbgdaFacts read_ibgda(const Options& o, const std::vector<std::string>& gpus);
// BAR1's length from a PCI device's sysfs `resource` file (line 2: start end flags), -1 if none.
long long bar1_from_resource(const std::string& resource);
// Whether NVreg_RegistryDwords ("Key=Value;Key=Value") sets PeerMappingOverride to non-zero.
bool peer_mapping_override_set(const std::string& registry_dwords);

// ---- configuration and error counters (inventory.cpp, netdev_live.cpp) -------------
struct NetdevFacts {
  std::string name, kind;        // kind: "veth", "bridge", ... (netlink), "" for a device
  std::string operstate;         // "up", "down", ...
  long long mtu = -1, speed_mbps = -1, ifindex = -1;
  std::string driver, driver_version, firmware, pci;  // "" unknown
  std::vector<std::pair<std::string, std::uint64_t>> counters;  // rx_dropped, carrier_changes, ...
};
// Every netdev but loopback: from <sys>/class/net (a recorded tree), or, on the live machine,
// from netlink and the ethtool ioctl, which see this process's network namespace (sysfs shows
// the namespace that mounted it: under `nsenter --net`, another one's devices).
std::vector<NetdevFacts> read_netdevs_sysfs(const Options& o);
const std::vector<std::string>& netdev_counter_names();  // rx_dropped, ..., carrier_changes
bool read_netdevs_live(const Options& o, std::vector<NetdevFacts>& out, std::string& error);
// <sys>/bus/pci/devices/<bdf>/{current,max}_link_{speed,width}: key suffix -> value.
std::vector<std::pair<std::string, std::string>> read_pcie_link(const Options& o, const std::string& bdf);
// The comparable configuration and the error counters of this node (Report::config, counters).
void read_inventory(const Options& o, const GpuSide* gpu, const RdmaSide* rdma,
                    std::vector<std::pair<std::string, std::string>>& config,
                    std::vector<std::pair<std::string, std::uint64_t>>& counters);

// ---- everything -----------------------------------------------------------------
struct Facts {
  std::string host;
  KernelFacts kernel;
  GpuSide gpu;
  PeerMemFacts peermem;
  RdmaSide rdma;
  TopoSide topo;
  VersionSide versions;
  CeilingSide ceilings;
  UcxDeviceFacts ucx_device;
  IbgdaFacts ibgda;
};
Facts gather(const Options& o);
std::string hostname();
std::vector<Check> assess(const Facts& f);  // pure
void assess_ceiling(const Facts& f, std::vector<Check>& out);  // area "ceiling"
void assess_gpu_initiated(const Facts& f, std::vector<Check>& out);  // area "gpu-initiated"

// Small helpers shared by the checks.
std::string human_bytes(unsigned long long bytes);
std::string cuda_version_string(int v);  // 13000 -> "13.0"
std::string join(const std::vector<std::string>& v, const char* sep = ", ");  // {"a","b"} -> "a, b"

}  // namespace gdr::doctor::detail
