// The configuration and error counters validate compares across hosts and over a run, read
// from a node's sysfs recorded before and after a run (data/nic_counters), and from this
// machine's own netlink.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "doctor/facts.h"
#include "fake_tree.h"

using namespace gdr::doctor;
using namespace gdr::doctor::detail;
using gdr::doctor::test::recorded_tree;

namespace {

struct Read {
  std::map<std::string, std::string> config;
  std::map<std::string, std::uint64_t> counters;
};

Read inventory(const std::string& tree, bool counters_only = false) {
  auto o = recorded_tree<Options>(tree);
  o.counters_only = counters_only;
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<std::pair<std::string, std::uint64_t>> counters;
  GpuSide none;
  read_inventory(o, counters_only ? nullptr : &none, nullptr, config, counters);
  Read r;
  for (auto& [k, v] : config) r.config[k] = v;
  for (auto& [k, v] : counters) r.counters[k] = v;
  return r;
}

}  // namespace

TEST(DoctorInventory, ReadsNicAndPortConfigurationFromRecordedSysfs) {
  auto r = inventory("nic_counters/before");
  EXPECT_EQ(r.config["net/eth0/mtu"], "1400");
  EXPECT_EQ(r.config["net/eth0/speed_mbps"], "unknown");  // virtio writes -1
  EXPECT_EQ(r.config["net/eth0/operstate"], "up");
  EXPECT_EQ(r.config["net/eth0/driver"], "virtio_net");
  EXPECT_EQ(r.config["net/eth0/firmware"], "unknown");  // only ethtool knows it
  EXPECT_EQ(r.config["net/eth0/pcie_width"], "unknown");  // its PCI function 0000:00:03.0 has no PCIe link files
  EXPECT_EQ(r.config["ib/mlx5_0/fw_ver"], "28.39.1002");
  EXPECT_EQ(r.config["ib/mlx5_0/driver"], "mlx5_core");
  EXPECT_EQ(r.config["ib/mlx5_0/driver_version"], "unknown");  // in-tree mlx5_core has no version file
  EXPECT_EQ(r.config["ib/mlx5_0/1/rate"], "200 Gb/sec (4X HDR)");
  EXPECT_EQ(r.config["ib/mlx5_0/1/state"], "ACTIVE");
  EXPECT_EQ(r.config["ib/mlx5_0/1/active_mtu"], "unknown");  // libibverbs not probed
  EXPECT_EQ(r.config["ib/mlx5_0/pcie_width"], "8");
  EXPECT_EQ(r.config["ib/mlx5_0/pcie_max_width"], "16");
  EXPECT_EQ(r.config["ib/mlx5_0/pcie_speed"], "16.0 GT/s PCIe");
  EXPECT_EQ(r.config["gpu/driver_version"], "unknown");
}

TEST(DoctorInventory, CountersMoveBetweenTheRecordedTrees) {
  auto before = inventory("nic_counters/before", true);
  auto after = inventory("nic_counters/after", true);
  EXPECT_TRUE(inventory("nic_counters/before", true).config.empty());  // --counters: counters only
  ASSERT_EQ(before.counters.size(), after.counters.size());
  std::map<std::string, std::uint64_t> moved;
  for (auto& [k, v] : after.counters)
    if (v != before.counters.at(k)) moved[k] = v - before.counters.at(k);
  std::map<std::string, std::uint64_t> want = {
      {"ib/mlx5_0/1/link_downed", 1},  {"ib/mlx5_0/1/link_error_recovery", 1},
      {"ib/mlx5_0/1/symbol_error", 12}, {"net/eth0/carrier_changes", 2},
      {"net/eth0/carrier_up_count", 1}, {"net/eth0/carrier_down_count", 1},
      {"net/eth0/rx_dropped", 5},      {"tcp/OutSegs", 20000},
      {"tcp/InSegs", 19000},          {"tcp/RetransSegs", 150},
      {"tcp/TCPOFOQueue", 40},        {"tcp/TCPTimeouts", 3},
      {"tcp/TCPLossProbes", 5}};
  EXPECT_EQ(moved, want);
  EXPECT_EQ(before.counters.count("ib/mlx5_0/1/port_xmit_discards"), 1u);
  EXPECT_EQ(before.counters.count("net/eth0/tx_errors"), 1u);
}

TEST(DoctorInventory, LiveNetlinkSeesThisNamespace) {
  // Netlink answers for the namespace this process is in: its links, none of them loopback,
  // each with an MTU and carrier counts (a kernel >= 3.15 reports IFLA_CARRIER_CHANGES).
  std::vector<NetdevFacts> nets;
  std::string why;
  ASSERT_TRUE(read_netdevs_live(Options{}, nets, why)) << why;
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<std::pair<std::string, std::uint64_t>> counters;
  read_inventory(Options{}, nullptr, nullptr, config, counters);
  for (const auto& n : nets) {
    EXPECT_NE(n.name, "lo");
    // A bridge (the emulated cluster's, docker0) comes and goes with what runs: not compared.
    bool listed = std::any_of(config.begin(), config.end(), [&](auto& c) { return c.first == "net/" + n.name + "/mtu"; });
    EXPECT_EQ(listed, n.kind != "bridge" && n.kind != "ifb") << n.name << " " << n.kind;
    EXPECT_GT(n.mtu, 0) << n.name;
    EXPECT_TRUE(std::any_of(n.counters.begin(), n.counters.end(),
                            [](auto& c) { return c.first == "carrier_changes"; })) << n.name;
  }
}

TEST(DoctorInventory, ConfigAndCountersSurviveJsonAndBytes) {
  Report r;
  r.host = "n1";
  r.verdict = "ready";
  r.config = {{"net/eth0/mtu", "1500"}, {"gpu/0/ecc", "unknown"}};
  r.counters = {{"net/eth0/carrier_changes", 4}, {"ib/mlx5_0/1/symbol_error", 18446744073709551615ull}};
  auto back = from_json(to_json({r}));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].config, r.config);
  EXPECT_EQ(back[0].counters, r.counters);
  auto raw = to_bytes(r);
  Report b = from_bytes(raw);
  EXPECT_EQ(b.config, r.config);
  EXPECT_EQ(b.counters, r.counters);
}
