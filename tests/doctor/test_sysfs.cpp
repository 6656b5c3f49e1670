// Parsers of sysfs/procfs, run against fake trees laid out like the real
// ones (paths and formats as the kernel writes them).
#include <gtest/gtest.h>

#include "doctor/facts.h"
#include "fake_tree.h"

using namespace gdr::doctor;
using namespace gdr::doctor::detail;
using gdr::doctor::test::FakeTree;

namespace {

Options roots(const FakeTree& t) {
  Options o;
  o.sys_root = t.sys();
  o.proc_root = t.proc();
  o.probe_libraries = false;
  return o;
}

std::string config_with_acs(uint16_t control) {
  std::string cfg(4096, '\0');
  auto put32 = [&](size_t off, uint32_t v) {
    for (int i = 0; i < 4; ++i) cfg[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put32(0x100, 0x0001u | (1u << 16) | (0x148u << 20));  // AER, next at 0x148
  put32(0x148, 0x000du | (1u << 16) | (0x000u << 20));  // ACS, last
  put32(0x14c, 0x007fu | (static_cast<uint32_t>(control) << 16));  // capability, control
  return cfg;
}

}  // namespace

TEST(DoctorSysfs, NormalizesBusIds) {
  EXPECT_EQ(normalize_busid("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_busid("0000:00:06.0"), "0000:00:06.0");
  EXPECT_EQ(normalize_busid("3b:00.1"), "0000:3b:00.1");
  EXPECT_EQ(normalize_busid("pci0000:00"), "");
  EXPECT_EQ(normalize_busid("mlx5_0"), "");
}

TEST(DoctorSysfs, NoPeerMemoryModule) {
  FakeTree t;
  t.mkdir("sys/module/nvidia");
  auto p = detect_peermem(roots(t));
  EXPECT_FALSE(p.nvidia_peermem);
  EXPECT_FALSE(p.nv_peer_mem);
  EXPECT_TRUE(p.memory_peers.empty());
}

TEST(DoctorSysfs, NvidiaPeermemLoaded) {
  FakeTree t;
  t.write("sys/module/nvidia_peermem/initstate", "live\n");
  auto p = detect_peermem(roots(t));
  EXPECT_TRUE(p.nvidia_peermem);
  EXPECT_FALSE(p.nv_peer_mem);
}

TEST(DoctorSysfs, OlderNvPeerMemWithMemoryPeers) {
  FakeTree t;
  t.write("sys/module/nv_peer_mem/version", "1.3\n");
  t.write("sys/kernel/mm/memory_peers/nv_mem/version", "1.3\n");
  auto p = detect_peermem(roots(t));
  EXPECT_FALSE(p.nvidia_peermem);
  EXPECT_TRUE(p.nv_peer_mem);
  ASSERT_EQ(p.memory_peers.size(), 1u);
  EXPECT_EQ(p.memory_peers[0], "nv_mem");
}

TEST(DoctorSysfs, GidTypesAndPreferredRoceV2) {
  FakeTree t;
  const std::string port = "sys/class/infiniband/mlx5_0/ports/1/";
  auto gid = [&](int i, const std::string& g, const std::string& type) {
    t.write(port + "gids/" + std::to_string(i), g + "\n");
    t.write(port + "gid_attrs/types/" + std::to_string(i), type.empty() ? "" : type + "\n");
    t.write(port + "gid_attrs/ndevs/" + std::to_string(i), "ens1f0np0\n");
  };
  gid(0, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "IB/RoCE v1");
  gid(1, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "RoCE v2");
  gid(2, "0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1");
  gid(3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2");
  gid(4, "0000:0000:0000:0000:0000:0000:0000:0000", "");  // unused entry
  gid(10, "fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2");

  auto gids = read_gids(roots(t), "mlx5_0", 1);
  ASSERT_EQ(gids.size(), 5u);
  EXPECT_EQ(gids[0].index, 0);
  EXPECT_EQ(gids[0].type, "IB/RoCE v1");
  EXPECT_EQ(gids[1].type, "RoCE v2");
  EXPECT_EQ(gids[1].ndev, "ens1f0np0");
  EXPECT_EQ(gids[4].index, 10);  // numeric, not lexical, order
  EXPECT_EQ(preferred_roce_v2_gid(gids), 3);  // IPv4-mapped v2 first

  gids.erase(gids.begin() + 3);
  EXPECT_EQ(preferred_roce_v2_gid(gids), 1);  // then any v2
  std::erase_if(gids, [](const Gid& g) { return g.type == "RoCE v2"; });
  EXPECT_EQ(preferred_roce_v2_gid(gids), -1);  // v1 only
}

TEST(DoctorSysfs, HcaPortsAndPciAddress) {
  FakeTree t;
  t.mkdir("sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0");
  t.link("sys/class/infiniband/mlx5_0/device", "../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0");
  const std::string p = "sys/class/infiniband/mlx5_0/ports/";
  t.write(p + "1/state", "4: ACTIVE\n");
  t.write(p + "1/phys_state", "5: LinkUp\n");
  t.write(p + "1/link_layer", "InfiniBand\n");
  t.write(p + "1/rate", "400 Gb/sec (4X NDR)\n");
  t.write(p + "2/state", "1: DOWN\n");
  t.write(p + "2/phys_state", "3: Disabled\n");
  t.write(p + "2/link_layer", "Ethernet\n");
  // A software device has no PCI parent.
  t.write("sys/class/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");

  auto o = roots(t);
  auto names = rdma_device_names(o);
  ASSERT_EQ(names, (std::vector<std::string>{"mlx5_0", "rxe0"}));
  auto h = read_hca_sysfs(o, "mlx5_0");
  EXPECT_EQ(h.pci, "0000:3b:00.0");
  ASSERT_EQ(h.ports.size(), 2u);
  EXPECT_EQ(h.ports[0].state, "ACTIVE");
  EXPECT_EQ(h.ports[0].phys_state, "LinkUp");
  EXPECT_EQ(h.ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(h.ports[0].rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(h.ports[1].state, "DOWN");
  EXPECT_EQ(read_hca_sysfs(o, "rxe0").pci, "");
}

TEST(DoctorSysfs, NvidiaGpusOnThePciBus) {
  FakeTree t;
  auto dev = [&](const std::string& bdf, const char* vendor, const char* cls) {
    t.write("sys/bus/pci/devices/" + bdf + "/vendor", std::string(vendor) + "\n");
    t.write("sys/bus/pci/devices/" + bdf + "/class", std::string(cls) + "\n");
  };
  dev("0000:00:06.0", "0x10de", "0x030200");  // H200: 3D controller
  dev("0000:00:07.0", "0x10de", "0x040300");  // NVIDIA HD audio: not a GPU
  dev("0000:00:08.0", "0x15b3", "0x020700");  // ConnectX
  EXPECT_EQ(nvidia_pci_functions(roots(t)), (std::vector<std::string>{"0000:00:06.0"}));
}

TEST(DoctorSysfs, AcsRedirectFromConfigSpace) {
  auto on = parse_acs("0000:02:00.0", config_with_acs(0x001d));  // SV, RR, CR, UF
  EXPECT_TRUE(on.readable);
  EXPECT_TRUE(on.present);
  EXPECT_EQ(on.control, 0x001d);
  EXPECT_TRUE(on.redirect());

  auto off = parse_acs("0000:02:00.0", config_with_acs(0x0001));  // source validation only
  EXPECT_TRUE(off.present);
  EXPECT_FALSE(off.redirect());

  auto user = parse_acs("0000:02:00.0", std::string(64, '\0'));  // non-root read
  EXPECT_FALSE(user.readable);

  std::string no_acs(4096, '\0');
  no_acs[0x100] = 0x01;  // AER and nothing after it
  auto none = parse_acs("0000:02:00.0", no_acs);
  EXPECT_TRUE(none.readable);
  EXPECT_FALSE(none.present);
}

TEST(DoctorSysfs, AcsReadThroughSysfs) {
  FakeTree t;
  t.write("sys/bus/pci/devices/0000:02:00.0/config", config_with_acs(0x0004));
  auto a = read_acs(roots(t), "0000:02:00.0");
  EXPECT_TRUE(a.redirect());
  EXPECT_FALSE(read_acs(roots(t), "0000:09:00.0").readable);
}

TEST(DoctorSysfs, IommuGroupTypes) {
  FakeTree t;
  t.mkdir("sys/class/iommu/dmar0");
  t.write("sys/kernel/iommu_groups/7/type", "DMA-FQ\n");
  t.write("sys/kernel/iommu_groups/8/type", "identity\n");
  t.mkdir("sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0");
  t.link("sys/bus/pci/devices/0000:3b:00.0/iommu_group", "../../../../kernel/iommu_groups/7");
  t.link("sys/bus/pci/devices/0000:3c:00.0/iommu_group", "../../../../kernel/iommu_groups/8");
  t.mkdir("sys/bus/pci/devices/0000:3d:00.0");
  auto o = roots(t);
  EXPECT_EQ(iommu_units(o), (std::vector<std::string>{"dmar0"}));
  EXPECT_EQ(iommu_group_type(o, "0000:3b:00.0"), "DMA-FQ");
  EXPECT_EQ(iommu_group_type(o, "0000:3c:00.0"), "identity");
  EXPECT_EQ(iommu_group_type(o, "0000:3d:00.0"), "");  // no IOMMU group
}

TEST(DoctorSysfs, KernelDriverAndCapabilities) {
  FakeTree t;
  t.write("proc/sys/kernel/osrelease", "6.8.0-31-generic\n");
  t.write("sys/module/nvidia/version", "580.159.04\n");
  t.write("proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n"
          "GCC version:  gcc version 13.2.0\n");
  t.write("proc/self/status", "Name:\tgdrbench\nCapInh:\t0000000000000000\n"
                              "CapEff:\t000001ffffffffff\n");
  auto o = roots(t);
  auto k = read_kernel(o);
  EXPECT_EQ(k.major, 6);
  EXPECT_EQ(k.minor, 8);
  auto m = read_nvidia_module(o);
  EXPECT_TRUE(m.loaded);
  EXPECT_EQ(m.version, "580.159.04");
  EXPECT_EQ(m.open_module, 1);
  EXPECT_TRUE(has_cap_ipc_lock(o));

  t.write("proc/self/status", "CapEff:\t0000000000000000\n");
  EXPECT_FALSE(has_cap_ipc_lock(o));
  t.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03\n");
  EXPECT_EQ(read_nvidia_module(o).open_module, 0);
}

TEST(DoctorSysfs, RdmaCoreVersionFromLibraryName) {
  EXPECT_EQ(rdma_core_from_soname("libibverbs.so.1.14.44.0"), "44.0");
  EXPECT_EQ(rdma_core_from_soname("libibverbs.so.1.14.50.0"), "50.0");
  EXPECT_EQ(rdma_core_from_soname("libibverbs.so.1"), "");
}
