// The gpu-initiated rows: what UCX's device API and InfiniBand GPUDirect Async need, read
// from the hand-made tree data/ibgda_node and from throw-away trees, judged by
// assess_gpu_initiated. These rows never change the verdict: present is pass, missing n/a.
#include <gtest/gtest.h>

#include "doctor/assess.h"
#include "doctor/facts.h"
#include "fake_tree.h"

using namespace gdr::doctor;
using namespace gdr::doctor::detail;

namespace {
const std::string kNode = std::string(GDR_DOCTOR_TEST_DATA) + "/ibgda_node";

Options node() { return test::recorded_tree<Options>("ibgda_node"); }

Facts facts_of(const Options& o) {
  Facts f;
  f.kernel = read_kernel(o);
  f.peermem = detect_peermem(o);
  f.gpu.module = read_nvidia_module(o);
  f.gpu.pci_gpus = nvidia_pci_functions(o);
  f.ibgda = read_ibgda(o, f.gpu.pci_gpus);
  return f;
}

const Check* row(const std::vector<Check>& rows, const std::string& name) {
  for (const auto& c : rows)
    if (c.name == name) return &c;
  return nullptr;
}
}  // namespace

TEST(DoctorGpuInitiated, ReadsTheIbgdaNodeTree) {
  auto o = node();
  auto gpus = nvidia_pci_functions(o);
  ASSERT_EQ(gpus, (std::vector<std::string>{"0000:1b:00.0", "0000:9a:00.0"}));
  auto g = read_ibgda(o, gpus);
  EXPECT_EQ(g.mlx5, std::vector<std::string>{"mlx5_0"});  // mlx5_1's driver is not mlx5_core
  EXPECT_TRUE(g.mlx5_ib);
  EXPECT_EQ(g.peer_mapping_override, 1);
  EXPECT_EQ(g.registry_dwords, "PeerMappingOverride=1;");
  EXPECT_EQ(g.registry_source, kNode + "/proc/driver/nvidia/params");
  ASSERT_EQ(g.bar1.size(), 2u);
  EXPECT_EQ(g.bar1[0], (std::pair<std::string, long long>{"0000:1b:00.0", 128LL << 30}));
  EXPECT_EQ(g.bar1[1], (std::pair<std::string, long long>{"0000:9a:00.0", 256LL << 20}));
}

TEST(DoctorGpuInitiated, ReadsUcxModulesWithoutLoadingThem) {
  auto u = read_ucx_device(kNode + "/ucx/lib", 1);
  EXPECT_TRUE(u.headers);
  EXPECT_EQ(u.device_api, 1);
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(u.device_ep, (std::vector<P>{{"cuda_ipc", "libuct_cuda.so.0"}, {"rc_gda", "libuct_ib_mlx5_gda.so.0"}}));
  // No UCX loaded: nothing read.
  auto none = read_ucx_device("", -1);
  EXPECT_TRUE(none.device_ep.empty());
  EXPECT_FALSE(none.headers);
  // A UCX folder without device endpoints or headers.
  test::FakeTree t;
  t.write("lib/ucx/libuct_cuda.so.0", std::string("uct_cuda_copy_iface\0", 20));
  auto old = read_ucx_device(t.path("lib"), 0);
  EXPECT_TRUE(old.device_ep.empty());
  EXPECT_FALSE(old.headers);
}

TEST(DoctorGpuInitiated, Parsers) {
  using namespace std::string_literals;  // the bytes hold NULs
  EXPECT_EQ(device_ep_symbols("x\0uct_cuda_ipc_ep_get_device_ep\0uct_cuda_ipc_ep_get_device_ep\0"
                              "uct_rc_gdaki_ep_get_device_ep\0_ep_get_device_ep\0uct_ep_get_device_ep\0"s),
            (std::vector<std::string>{"cuda_ipc", "rc_gda"}));
  EXPECT_TRUE(device_ep_symbols("uct_cuda_ipc_iface_get_device_address").empty());
  EXPECT_TRUE(peer_mapping_override_set("PeerMappingOverride=1;"));
  EXPECT_TRUE(peer_mapping_override_set("RmFoo=2; peermappingoverride = 0x1;"));
  EXPECT_FALSE(peer_mapping_override_set("PeerMappingOverride=0;"));
  EXPECT_FALSE(peer_mapping_override_set(""));
  EXPECT_FALSE(peer_mapping_override_set("PeerMappingOverride;"));
  EXPECT_EQ(bar1_from_resource("0x1 0x2 0x0\n0x0000380000000000 0x000038000fffffff 0x14220c\n"), 256LL << 20);
  EXPECT_EQ(bar1_from_resource("0x1 0x2 0x0\n0x0 0x0 0x0\n"), -1);  // unassigned
  EXPECT_EQ(bar1_from_resource("0x1 0x2 0x0\n"), -1);               // no BAR1 line
  EXPECT_EQ(bar1_from_resource(""), -1);
}

TEST(DoctorGpuInitiated, RegistryDwordsFromTheModuleParameterWhenProcHasNone) {
  test::FakeTree t;
  Options o;
  o.sys_root = t.sys();
  o.proc_root = t.proc();
  EXPECT_EQ(read_ibgda(o, {}).peer_mapping_override, -1);  // no driver at all
  t.write("sys/module/nvidia/parameters/NVreg_RegistryDwords", "(null)\n");
  auto g = read_ibgda(o, {});
  EXPECT_EQ(g.peer_mapping_override, 0);
  EXPECT_EQ(g.registry_dwords, "");
  EXPECT_EQ(g.registry_source, t.sys() + "/module/nvidia/parameters/NVreg_RegistryDwords");
  t.write("proc/driver/nvidia/params", "EnableMSI: 1\nRegistryDwords: \"\"\n");
  EXPECT_EQ(read_ibgda(o, {}).registry_source, t.proc() + "/driver/nvidia/params");  // proc first
  EXPECT_EQ(read_ibgda(o, {}).peer_mapping_override, 0);
}

TEST(DoctorGpuInitiated, ReadyNodePassesAndSaysWhatItCannotRead) {
  Facts f = facts_of(node());
  f.versions.ucx_version = "1.22.0";
  f.ucx_device = read_ucx_device(kNode + "/ucx/lib", 1);
  GpuFacts g0;
  g0.bus_id = "0000:1b:00.0";
  g0.memory_bytes = 80LL << 30;
  f.gpu.gpus.push_back(g0);
  std::vector<Check> rows;
  assess_gpu_initiated(f, rows);
  for (const auto& c : rows) {
    EXPECT_EQ(c.area, "gpu-initiated");
    EXPECT_FALSE(c.evidence.empty()) << c.name;
  }
  const Check* u = row(rows, "ucx device api");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->status, "pass") << u->evidence;
  EXPECT_NE(u->evidence.find("cuda_ipc (libuct_cuda.so.0), rc_gda (libuct_ib_mlx5_gda.so.0)"), std::string::npos);
  EXPECT_TRUE(u->fix.empty()) << u->fix;  // rc_gda: between nodes too
  const Check* devx = row(rows, "ibgda mlx5 devx");
  ASSERT_NE(devx, nullptr);
  EXPECT_EQ(devx->status, "pass");
  EXPECT_NE(devx->evidence.find("cannot be read from sysfs"), std::string::npos);  // honest
  EXPECT_EQ(row(rows, "ibgda gpu memory")->status, "pass");
  EXPECT_NE(row(rows, "ibgda gpu memory")->evidence.find("nvidia_peermem"), std::string::npos);
  EXPECT_EQ(row(rows, "ibgda peer mapping")->status, "pass");
  const Check* b0 = row(rows, "gpu0 bar1");
  ASSERT_NE(b0, nullptr);
  EXPECT_EQ(b0->status, "pass");
  EXPECT_NE(b0->evidence.find("BAR1 128 GiB"), std::string::npos) << b0->evidence;
  const Check* b1 = row(rows, "gpu1 bar1");  // 256 MiB, memory unknown: below 1 GiB
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->status, "n/a");
  EXPECT_NE(b1->fix.find("Resizable BAR"), std::string::npos);
}

TEST(DoctorGpuInitiated, MissingPiecesAreExplainedAndNeverChangeTheVerdict) {
  test::FakeTree t;
  t.write("proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
  t.write("sys/module/nvidia/version", "580.159.04\n");
  t.write("proc/driver/nvidia/params", "RegistryDwords: \"\"\n");
  t.write("sys/bus/pci/devices/0000:3b:00.0/vendor", "0x10de\n");
  t.write("sys/bus/pci/devices/0000:3b:00.0/class", "0x030200\n");
  t.write("sys/bus/pci/devices/0000:3b:00.0/resource",
          "0x1 0x2 0x0\n0x0000380000000000 0x000038000fffffff 0x14220c\n");
  t.link("sys/class/infiniband/mlx5_0/device/driver", "../../../../../bus/pci/drivers/mlx5_core");
  Options o;
  o.sys_root = t.sys();
  o.proc_root = t.proc();
  Facts f = facts_of(o);
  f.gpu.module.loaded = true;
  f.versions.ucx_version = "1.22.0";
  test::FakeTree u;
  u.write("lib/ucx/libuct_cuda.so.0", std::string("uct_cuda_ipc_ep_get_device_ep\0", 30));
  f.ucx_device = read_ucx_device(u.path("lib"), 1);
  GpuFacts g0;
  g0.bus_id = "0000:3b:00.0";
  g0.memory_bytes = 80LL << 30;
  f.gpu.gpus.push_back(g0);
  std::vector<Check> rows;
  assess_gpu_initiated(f, rows);
  EXPECT_EQ(verdict_of(rows), "ready");  // pass or n/a only
  const Check* u0 = row(rows, "ucx device api");
  EXPECT_EQ(u0->status, "n/a");  // cuda_ipc alone: its device puts did not run where tried
  EXPECT_NE(u0->evidence.find("cuda_ipc only"), std::string::npos) << u0->evidence;
  EXPECT_NE(u0->fix.find("rc_gda"), std::string::npos);
  const Check* devx = row(rows, "ibgda mlx5 devx");
  EXPECT_EQ(devx->status, "n/a");
  EXPECT_NE(devx->evidence.find("mlx5_ib is not loaded"), std::string::npos);
  EXPECT_NE(devx->fix.find("modprobe mlx5_ib"), std::string::npos);
  const Check* mem = row(rows, "ibgda gpu memory");
  EXPECT_EQ(mem->status, "n/a");
  EXPECT_NE(mem->fix.find("nvidia-peermem"), std::string::npos);
  const Check* pm = row(rows, "ibgda peer mapping");
  EXPECT_EQ(pm->status, "n/a");
  EXPECT_NE(pm->evidence.find("not set"), std::string::npos);
  EXPECT_NE(pm->fix.find("NVreg_RegistryDwords=\"PeerMappingOverride=1;\""), std::string::npos);
  const Check* bar = row(rows, "gpu0 bar1");  // 256 MiB against 80 GiB of memory
  EXPECT_EQ(bar->status, "n/a");
  EXPECT_NE(bar->evidence.find("GPU memory 80 GiB"), std::string::npos) << bar->evidence;
}

TEST(DoctorGpuInitiated, NothingReadableSaysUnknownAndWhy) {
  Facts f;  // no UCX, no driver, no RDMA device, no GPU
  f.versions.ucx_error = "UCX not loadable: libucp.so.0: cannot open shared object file";
  std::vector<Check> rows;
  assess_gpu_initiated(f, rows);
  ASSERT_EQ(rows.size(), 4u);  // no GPU: no bar1 rows
  for (const auto& c : rows) EXPECT_EQ(c.status, "n/a") << c.name;
  EXPECT_NE(row(rows, "ucx device api")->evidence.find("unknown: UCX not loaded (UCX not loadable"),
            std::string::npos);
  EXPECT_NE(row(rows, "ibgda peer mapping")->evidence.find("unknown"), std::string::npos);
  EXPECT_TRUE(row(rows, "ibgda peer mapping")->fix.empty());  // no driver: nothing to set yet
}

TEST(DoctorGpuInitiated, TableShowsTheFixOfAMissingPiece) {
  Report r;
  r.host = "node01";
  r.checks = {{"gpu-initiated", "ibgda peer mapping", "n/a", "PeerMappingOverride not set",
               "options nvidia NVreg_RegistryDwords"},
              {"versions", "rdma-core", "n/a", "libibverbs missing", "apt install rdma-core"}};
  r.verdict = verdict_of(r.checks);
  auto table = to_table({r});
  EXPECT_NE(table.find("fix: options nvidia NVreg_RegistryDwords"), std::string::npos) << table;
  EXPECT_EQ(table.find("fix: apt install rdma-core"), std::string::npos) << table;  // as before
}
