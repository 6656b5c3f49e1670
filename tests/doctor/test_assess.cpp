// The judgement (facts -> checks -> verdict) on hand-made facts: a ready
// node, and one thing broken at a time.
#include <gtest/gtest.h>

#include "doctor/facts.h"

using namespace gdr::doctor;
using namespace gdr::doctor::detail;

namespace {

Facts ready_node() {
  Facts f;
  f.host = "node01";
  f.kernel = {"6.8.0-31-generic", 6, 8};
  auto& g = f.gpu;
  g.module = {true, "580.159.04", 1};
  g.nvml = true;
  g.driver_version = "580.159.04";
  g.cuda = true;
  g.cuda_driver_version = 13000;
  g.cuda_runtime_version = 13000;
  GpuFacts gpu;
  gpu.bus_id = "0000:03:00.0";
  gpu.name = "NVIDIA H200";
  gpu.bar1_bytes = 128LL << 30;
  gpu.memory_bytes = 141LL << 30;
  gpu.cuda_visible = true;
  gpu.gdr_attr = 1;
  gpu.dmabuf_attr = 1;
  g.gpus = {gpu};
  f.peermem.nvidia_peermem = true;
  auto& r = f.rdma;
  r.verbs = true;
  r.rdma_core_version = "50.0";
  r.reg_dmabuf_symbol = true;
  HcaFacts h;
  h.name = "mlx5_0";
  h.pci = "0000:04:00.0";
  h.listed = true;
  h.dmabuf_mr = 1;
  PortFacts p;
  p.port = 1;
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  p.link_layer = "InfiniBand";
  p.rate = "400 Gb/sec (4X NDR)";
  p.active_mtu = 4096;
  h.ports = {p};
  r.hcas = {h};
  r.memlock_unlimited = true;
  auto& t = f.topo;
  t.loaded = true;
  t.pairs = {Pairing{"0000:03:00.0", "mlx5_0", PciClass::PIX, {"0000:02:00.0"}}};
  AcsFacts a;
  a.bdf = "0000:02:00.0";
  a.readable = true;
  a.present = true;
  t.acs = {a};
  auto& v = f.versions;
  v.ucx_version = "1.19.0";
  v.ucx_cuda = 1;
  v.ucx_memory_types = "host, cuda";
  v.mpi_version = "Open MPI v5.0.7";
  v.mpi_cuda = 1;
  v.nccl_version = "2.28.3";
  return f;
}

Report judge(const Facts& f) {
  Report r{f.host, assess(f), ""};
  r.verdict = verdict_of(r.checks);
  return r;
}

const Check& get(const Report& r, const std::string& area, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.area == area && c.name == name) return c;
  static Check none{"", "", "missing", "", ""};
  ADD_FAILURE() << "no check " << area << "/" << name;
  return none;
}

}  // namespace

TEST(DoctorAssess, ReadyNode) {
  auto r = judge(ready_node());
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.status == "pass" || c.status == "n/a") << c.area << "/" << c.name << ": " << c.evidence;
    EXPECT_FALSE(c.evidence.empty()) << c.area << "/" << c.name;
  }
  EXPECT_EQ(r.verdict, "ready");
  EXPECT_EQ(exit_code(r), 0);
  EXPECT_EQ(get(r, "topology", "gpu0").status, "pass");
  EXPECT_NE(get(r, "gpu", "gpu0").evidence.find("BAR1 128 GiB"), std::string::npos);
  EXPECT_NE(get(r, "rdma", "mlx5_0 port 1").evidence.find("MTU 4096"), std::string::npos);
}

TEST(DoctorAssess, EveryWarnAndFailCarriesAFix) {
  Facts f;  // nothing at all
  f.host = "empty";
  auto r = judge(f);
  for (const auto& c : r.checks)
    if (c.status == "warn" || c.status == "fail") EXPECT_FALSE(c.fix.empty()) << c.area << "/" << c.name;
}

TEST(DoctorAssess, HcaAcrossSocketsIsDegraded) {
  auto f = ready_node();
  f.topo.pairs[0].cls = PciClass::SYS;
  auto r = judge(f);
  EXPECT_EQ(get(r, "topology", "gpu0").status, "warn");
  EXPECT_NE(get(r, "topology", "gpu0").evidence.find("SYS"), std::string::npos);
  EXPECT_EQ(r.verdict, "degraded");
  EXPECT_EQ(exit_code(r), 3);
}

TEST(DoctorAssess, PxbIsStillReady) {
  auto f = ready_node();
  f.topo.pairs[0].cls = PciClass::PXB;
  EXPECT_EQ(judge(f).verdict, "ready");
}

TEST(DoctorAssess, DmaBufAloneIsEnough) {
  auto f = ready_node();
  f.peermem = {};
  auto r = judge(f);
  EXPECT_EQ(get(r, "gpudirect", "nvidia_peermem").status, "n/a");
  EXPECT_EQ(get(r, "gpudirect", "dma-buf").status, "pass");
  EXPECT_EQ(r.verdict, "ready");
}

TEST(DoctorAssess, PeermemAloneIsEnough) {
  auto f = ready_node();
  f.gpu.gpus[0].dmabuf_attr = 0;  // proprietary kernel module
  f.gpu.module.open_module = 0;
  auto r = judge(f);
  EXPECT_EQ(get(r, "gpudirect", "nvidia_peermem").status, "pass");
  EXPECT_EQ(get(r, "gpudirect", "dma-buf").status, "n/a");
  EXPECT_NE(get(r, "gpudirect", "dma-buf").fix.find("open kernel modules"), std::string::npos);
  EXPECT_EQ(r.verdict, "ready");
}

TEST(DoctorAssess, NeitherPeermemNorDmaBufIsNotReady) {
  auto f = ready_node();
  f.peermem = {};
  f.rdma.hcas[0].dmabuf_mr = 0;
  f.rdma.hcas[0].dmabuf_evidence = "Operation not supported";
  auto r = judge(f);
  EXPECT_EQ(get(r, "gpudirect", "nvidia_peermem").status, "fail");
  EXPECT_EQ(get(r, "gpudirect", "dma-buf").status, "fail");
  EXPECT_EQ(r.verdict, "not ready");
  EXPECT_EQ(exit_code(r), 4);
}

TEST(DoctorAssess, OldKernelRefusesDmaBuf) {
  auto f = ready_node();
  f.peermem = {};
  f.kernel = {"5.4.0-150-generic", 5, 4};
  auto r = judge(f);
  EXPECT_EQ(get(r, "gpudirect", "dma-buf").status, "fail");
  EXPECT_NE(get(r, "gpudirect", "dma-buf").evidence.find("< 5.12"), std::string::npos);
}

TEST(DoctorAssess, RoceGids) {
  auto f = ready_node();
  auto& p = f.rdma.hcas[0].ports[0];
  p.link_layer = "Ethernet";
  p.gids = {Gid{0, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "IB/RoCE v1", "eth0"},
            Gid{1, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "RoCE v2", "eth0"}};
  auto r = judge(f);
  EXPECT_EQ(get(r, "rdma", "mlx5_0 port 1 gid").status, "pass");
  EXPECT_NE(get(r, "rdma", "mlx5_0 port 1 gid").evidence.find("index 1"), std::string::npos);
  EXPECT_EQ(r.verdict, "ready");

  p.gids.pop_back();
  r = judge(f);
  EXPECT_EQ(get(r, "rdma", "mlx5_0 port 1 gid").status, "warn");
  EXPECT_EQ(r.verdict, "degraded");

  p.gids.clear();
  r = judge(f);
  EXPECT_EQ(get(r, "rdma", "mlx5_0 port 1 gid").status, "fail");
  EXPECT_EQ(r.verdict, "not ready");
}

TEST(DoctorAssess, PortStates) {
  auto f = ready_node();
  PortFacts down;
  down.port = 2;
  down.state = "DOWN";
  down.phys_state = "Disabled";
  down.link_layer = "InfiniBand";
  f.rdma.hcas[0].ports.push_back(down);
  auto r = judge(f);
  EXPECT_EQ(get(r, "rdma", "mlx5_0 port 2").status, "n/a");  // unused second port
  EXPECT_EQ(r.verdict, "ready");

  HcaFacts second = f.rdma.hcas[0];
  second.name = "mlx5_1";
  second.ports = {down};
  second.ports[0].port = 1;
  f.rdma.hcas.push_back(second);
  r = judge(f);
  EXPECT_EQ(get(r, "rdma", "mlx5_1 port 1").status, "warn");  // a rail is down
  EXPECT_EQ(r.verdict, "degraded");

  f.rdma.hcas[0].ports[0].state = "DOWN";
  r = judge(f);
  EXPECT_EQ(get(r, "rdma", "mlx5_0 port 1").status, "fail");  // no port up anywhere
  EXPECT_EQ(r.verdict, "not ready");
}

TEST(DoctorAssess, Memlock) {
  auto f = ready_node();
  f.rdma.memlock_unlimited = false;
  f.rdma.memlock_bytes = 8ULL << 20;
  auto r = judge(f);
  EXPECT_EQ(get(r, "rdma", "memlock").status, "warn");
  EXPECT_NE(get(r, "rdma", "memlock").evidence.find("8 MiB"), std::string::npos);
  f.rdma.cap_ipc_lock = true;
  EXPECT_EQ(get(judge(f), "rdma", "memlock").status, "pass");
}

TEST(DoctorAssess, AcsAndIommuOnThePath) {
  auto f = ready_node();
  f.topo.acs[0].control = 0x0004;
  auto r = judge(f);
  EXPECT_EQ(get(r, "topology", "acs").status, "warn");
  EXPECT_NE(get(r, "topology", "acs").evidence.find("0000:02:00.0"), std::string::npos);
  EXPECT_EQ(r.verdict, "degraded");

  f = ready_node();
  f.topo.iommu = {"dmar0"};
  f.topo.iommu_types = {{"0000:03:00.0", "identity"}, {"0000:04:00.0", "identity"}};
  EXPECT_EQ(get(judge(f), "topology", "iommu").status, "pass");
  f.topo.iommu_types[1].second = "DMA-FQ";
  r = judge(f);
  EXPECT_EQ(get(r, "topology", "iommu").status, "warn");
  EXPECT_NE(get(r, "topology", "iommu").fix.find("iommu=pt"), std::string::npos);
}

TEST(DoctorAssess, GpuProblems) {
  auto f = ready_node();
  f.gpu.gpus[0].gdr_attr = 0;  // a consumer GPU
  EXPECT_EQ(get(judge(f), "gpu", "gpu0").status, "fail");

  f = ready_node();
  f.gpu.gpus[0].bar1_bytes = 256LL << 20;
  auto r = judge(f);
  EXPECT_EQ(get(r, "gpu", "gpu0").status, "warn");
  EXPECT_EQ(r.verdict, "degraded");

  f = ready_node();
  f.gpu.cuda_runtime_version = 13010;
  f.gpu.cuda_driver_version = 12080;
  EXPECT_EQ(get(judge(f), "gpu", "cuda").status, "fail");
}

TEST(DoctorAssess, LibrariesWithoutCuda) {
  auto f = ready_node();
  f.versions.ucx_cuda = 0;
  f.versions.ucx_memory_types = "host";
  f.versions.mpi_cuda = 0;
  auto r = judge(f);
  EXPECT_EQ(get(r, "versions", "ucx").status, "warn");
  EXPECT_EQ(get(r, "versions", "mpi").status, "warn");
  EXPECT_EQ(r.verdict, "degraded");
  EXPECT_NE(readiness_warning(r, true, "ucx"), "");
  EXPECT_NE(readiness_warning(r, true, "mpi"), "");
  EXPECT_EQ(readiness_warning(r, true, "verbs"), "");
  EXPECT_EQ(readiness_warning(r, false, "ucx"), "");
}

TEST(DoctorAssess, CpuOnlyMachine) {
  Facts f;
  f.host = "cpu01";
  f.kernel = {"6.1.0-57-amd64", 6, 1};
  f.gpu.nvml_error = "libnvidia-ml.so.1 not loadable: not found";
  f.gpu.cuda_error = "libcuda.so.1 not loadable: not found";
  f.rdma.verbs = true;
  f.rdma.rdma_core_version = "44.0";
  f.rdma.reg_dmabuf_symbol = true;
  f.rdma.cap_ipc_lock = true;
  f.topo.error = "no GPU";
  f.versions.mpi_version = "Open MPI v4.1.4";
  f.versions.mpi_cuda = 0;
  auto r = judge(f);
  EXPECT_EQ(get(r, "gpu", "driver").status, "fail");
  EXPECT_EQ(get(r, "gpu", "cuda").status, "n/a");
  EXPECT_EQ(get(r, "gpudirect", "nvidia_peermem").status, "n/a");
  EXPECT_EQ(get(r, "gpudirect", "dma-buf").status, "n/a");
  EXPECT_EQ(get(r, "rdma", "devices").status, "fail");
  EXPECT_EQ(get(r, "topology", "gpu-hca").status, "n/a");
  EXPECT_EQ(r.verdict, "not ready");
  EXPECT_EQ(exit_code(r), 4);
  auto w = readiness_warning(r, true, "verbs");
  EXPECT_NE(w.find("not ready"), std::string::npos);
  EXPECT_NE(w.find("gpu/driver"), std::string::npos);
  EXPECT_EQ(readiness_warning(r, false, "verbs"), "");  // host memory: memlock is fine (root)
}

TEST(DoctorAssess, GpuWithoutHca) {  // the lent H200: GPU, dma-buf, no RDMA device
  auto f = ready_node();
  f.peermem = {};
  f.rdma.hcas.clear();
  f.topo = {};
  f.topo.error = "no RDMA device on PCI";
  auto r = judge(f);
  EXPECT_EQ(get(r, "gpu", "gpu0").status, "pass");
  EXPECT_EQ(get(r, "gpudirect", "dma-buf").status, "n/a");
  EXPECT_NE(get(r, "gpudirect", "dma-buf").evidence.find("no RDMA device to probe"), std::string::npos);
  EXPECT_EQ(get(r, "gpudirect", "nvidia_peermem").status, "n/a");
  EXPECT_EQ(get(r, "rdma", "devices").status, "fail");
  EXPECT_EQ(r.verdict, "not ready");
  EXPECT_EQ(readiness_warning(r, true, "ucx"), "");  // UCX over cuda_ipc needs no HCA
  EXPECT_NE(readiness_warning(r, true, "verbs"), "");
}

TEST(DoctorAssess, GpuOnPciWithoutDriver) {
  Facts f;
  f.host = "fresh";
  f.kernel = {"6.8.0-31-generic", 6, 8};
  f.gpu.pci_gpus = {"0000:00:06.0"};
  f.gpu.nvml_error = "NVML not loadable: libnvidia-ml.so.1: cannot open shared object file";
  f.gpu.cuda_error = "CUDA driver not loadable: libcuda.so.1: cannot open shared object file";
  auto r = judge(f);
  const auto& d = get(r, "gpu", "driver");
  EXPECT_EQ(d.status, "fail");
  EXPECT_NE(d.evidence.find("0000:00:06.0"), std::string::npos) << d.evidence;
  EXPECT_NE(d.fix.find("install the NVIDIA"), std::string::npos) << d.fix;
  EXPECT_EQ(get(r, "gpu", "cuda").status, "fail");  // a GPU is there: libcuda is missing
  EXPECT_EQ(r.verdict, "not ready");
}
