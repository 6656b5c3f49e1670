// GPU-HCA classes computed by hwloc itself from an XML topology in which
// every class of `nvidia-smi topo -m` occurs (see data/two_socket.xml).
#include <gtest/gtest.h>

#include <algorithm>

#include "doctor/facts.h"
#include "fake_tree.h"

using namespace gdr::doctor;
using namespace gdr::doctor::detail;
using gdr::doctor::test::FakeTree;

namespace {
const std::string kXml = std::string(GDR_DOCTOR_TEST_DATA) + "/two_socket.xml";
const std::string kGpu0 = "0000:03:00.0", kGpu1 = "0000:21:00.0", kGpu2 = "0000:09:00.0",
                  kGpu3 = "0000:0b:00.0";
const std::string kHca0 = "0000:04:00.0", kHca1 = "0000:81:00.0", kHca2 = "0000:0a:00.0";

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST(DoctorTopology, LoadsTheXml) {
  Topology t(kXml);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(t.has_pci(kGpu0));
  EXPECT_TRUE(t.has_pci(kHca1));
  EXPECT_FALSE(t.has_pci("0000:ff:00.0"));
}

TEST(DoctorTopology, MissingXmlIsAnError) {
  Topology t("/nonexistent/topology.xml");
  EXPECT_FALSE(t.ok());
  EXPECT_FALSE(t.error().empty());
  EXPECT_EQ(t.classify(kGpu0, kHca0), PciClass::Unknown);
}

TEST(DoctorTopology, SameSwitchIsPIX) {
  Topology t(kXml);
  std::vector<std::string> bridges;
  EXPECT_EQ(t.classify(kGpu0, kHca0, &bridges), PciClass::PIX);
  // downstream ports of both sides and the switch's upstream port
  EXPECT_EQ(bridges.size(), 3u);
  EXPECT_TRUE(contains(bridges, "0000:02:00.0"));
  EXPECT_TRUE(contains(bridges, "0000:02:01.0"));
  EXPECT_TRUE(contains(bridges, "0000:01:00.0"));
  EXPECT_EQ(t.classify(kHca0, kGpu0), PciClass::PIX);  // symmetric
}

TEST(DoctorTopology, NestedSwitchesArePXB) {
  Topology t(kXml);
  EXPECT_EQ(t.classify(kGpu2, kHca2), PciClass::PXB);
}

TEST(DoctorTopology, SameHostBridgeIsPHB) {
  Topology t(kXml);
  std::vector<std::string> bridges;
  EXPECT_EQ(t.classify(kGpu3, kHca0, &bridges), PciClass::PHB);
  EXPECT_FALSE(contains(bridges, "0000:00:00.0"));  // host bridges are not listed
  EXPECT_EQ(t.classify(kGpu0, kHca2), PciClass::PHB);  // different root ports
}

TEST(DoctorTopology, HostBridgesOfOneSocketAreNODE) {
  Topology t(kXml);
  EXPECT_EQ(t.classify(kGpu1, kHca0), PciClass::NODE);
}

TEST(DoctorTopology, OtherSocketIsSYS) {
  Topology t(kXml);
  EXPECT_EQ(t.classify(kGpu0, kHca1), PciClass::SYS);
  EXPECT_EQ(t.classify(kGpu1, kHca1), PciClass::SYS);
}

TEST(DoctorTopology, UnknownDevice) {
  Topology t(kXml);
  EXPECT_EQ(t.classify(kGpu0, "0000:ee:00.0"), PciClass::Unknown);
}

TEST(DoctorTopology, ProbePairsEveryGpuWithEveryHcaAndReadsAcsOnTheNearestPath) {
  FakeTree tree;
  // ACS redirect on the GPU0 side downstream port only.
  std::string cfg(4096, '\0');
  auto put32 = [&](size_t off, uint32_t v) {
    for (int i = 0; i < 4; ++i) cfg[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put32(0x100, 0x000du);
  put32(0x104, 0x007fu | (0x000cu << 16));
  tree.write("sys/bus/pci/devices/0000:02:00.0/config", cfg);
  std::string clean = cfg;
  clean[0x106] = 0;
  tree.write("sys/bus/pci/devices/0000:02:01.0/config", clean);
  tree.write("sys/bus/pci/devices/0000:01:00.0/config", clean);

  Options o;
  o.sys_root = tree.sys();
  o.proc_root = tree.proc();
  o.topology_xml = kXml;
  std::vector<HcaFacts> hcas(3);
  hcas[0].name = "mlx5_0", hcas[0].pci = kHca0;
  hcas[1].name = "mlx5_1", hcas[1].pci = kHca1;
  hcas[2].name = "rxe0";  // software device: no PCI, not paired

  auto s = probe_topology(o, {kGpu0, kGpu1}, hcas);
  ASSERT_TRUE(s.loaded) << s.error;
  ASSERT_EQ(s.pairs.size(), 4u);
  EXPECT_EQ(s.pairs[0].hca, "mlx5_0");
  EXPECT_EQ(s.pairs[0].cls, PciClass::PIX);
  EXPECT_EQ(s.pairs[1].cls, PciClass::SYS);
  EXPECT_EQ(s.pairs[2].cls, PciClass::NODE);
  // Bridges of the nearest paths, each once: GPU0-mlx5_0 has three, GPU1-mlx5_0
  // adds the two root ports (20:01.0, 00:01.0), whose config space is absent.
  ASSERT_EQ(s.acs.size(), 5u);
  int redirect = 0, unreadable = 0;
  for (const auto& a : s.acs) {
    redirect += a.redirect();
    unreadable += !a.readable;
  }
  EXPECT_EQ(redirect, 1);
  EXPECT_EQ(unreadable, 2);
  EXPECT_TRUE(s.iommu.empty());
}

TEST(DoctorTopology, ProbeWithoutHcaSaysSo) {
  Options o;
  o.topology_xml = kXml;
  auto s = probe_topology(o, {kGpu0}, {});
  EXPECT_FALSE(s.loaded);
  EXPECT_NE(s.error.find("no RDMA device"), std::string::npos);
}

// Rails for host-rounds (src/planning/schedule.cpp): the NIC a GPU shares a switch with is its rail;
// a tie, or a NIC only as near as the socket, names none.
TEST(DoctorTopology, NicNearestAGpuIsItsRailWhenOneIsNearest) {
  Topology t(kXml);
  std::string why;
  EXPECT_EQ(t.nic_near_pci(kGpu0, why), "mlx5_0");  // PIX
  EXPECT_EQ(t.nic_near_pci(kGpu2, why), "mlx5_2");  // PXB, nested switches
  EXPECT_EQ(t.nic_near_pci("00000000:03:00.0", why), "mlx5_0");  // NVML's 8-digit domain
  why.clear();
  EXPECT_EQ(t.nic_near_pci(kGpu3, why), "");  // PHB to mlx5_0 and mlx5_2 alike
  EXPECT_NE(why.find("2 RDMA NICs (mlx5_0,mlx5_2) equally near"), std::string::npos) << why;
  why.clear();
  EXPECT_EQ(t.nic_near_pci(kGpu1, why), "");  // only the socket in common, with both
  EXPECT_EQ(why, "2 RDMA NICs (mlx5_0,mlx5_2) equally near 0000:21:00.0 (NODE)");
  why.clear();
  EXPECT_EQ(t.nic_near_pci("0000:ee:00.0", why), "");
  EXPECT_EQ(why, "0000:ee:00.0 is not in the topology");
  Topology missing("/nonexistent/topology.xml");
  EXPECT_EQ(missing.nic_near_pci(kGpu0, why), "");
  EXPECT_FALSE(why.empty());
}
