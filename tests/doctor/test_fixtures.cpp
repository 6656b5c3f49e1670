// Fixtures captured from real machines (see data/*/README.md): the parsers
// read what the kernel really wrote, and JSON written by a real run parses.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "doctor/facts.h"
#include "fake_tree.h"

using namespace gdr::doctor;
using namespace gdr::doctor::detail;

namespace {
const std::string kSoftRoce = std::string(GDR_DOCTOR_TEST_DATA) + "/softroce";

Options softroce() { return test::recorded_tree<Options>("softroce"); }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(DoctorFixtures, SoftRoceSysfs) {
  auto o = softroce();
  ASSERT_EQ(rdma_device_names(o), std::vector<std::string>{"rxe0"});
  auto h = read_hca_sysfs(o, "rxe0");
  EXPECT_EQ(h.pci, "");  // software device
  ASSERT_EQ(h.ports.size(), 1u);
  const auto& p = h.ports[0];
  EXPECT_EQ(p.state, "ACTIVE");
  EXPECT_EQ(p.phys_state, "LinkUp");
  EXPECT_EQ(p.link_layer, "Ethernet");
  EXPECT_EQ(p.rate, "10 Gb/sec (1X FDR10)");
  ASSERT_EQ(p.gids.size(), 1u);
  EXPECT_EQ(p.gids[0].type, "RoCE v2");
  EXPECT_EQ(p.gids[0].ndev, "veth0");
  EXPECT_EQ(preferred_roce_v2_gid(p.gids), 0);
  auto k = read_kernel(o);
  EXPECT_EQ(k.major, 6);
  EXPECT_EQ(k.minor, 1);
}

TEST(DoctorFixtures, SoftRoceJudged) {
  auto o = softroce();
  Facts f;
  f.host = "softroce";
  f.kernel = read_kernel(o);
  f.rdma.verbs = true;
  f.rdma.reg_dmabuf_symbol = true;
  f.rdma.memlock_unlimited = true;
  auto h = read_hca_sysfs(o, "rxe0");
  h.listed = true;
  h.dmabuf_mr = 0;
  h.dmabuf_evidence = "ibv_reg_dmabuf_mr: Operation not supported";
  f.rdma.hcas = {h};
  f.topo.error = "no GPU";
  Report r{f.host, assess(f), ""};
  r.verdict = verdict_of(r.checks);
  auto status = [&](const std::string& area, const std::string& name) {
    for (const auto& c : r.checks)
      if (c.area == area && c.name == name) return c.status;
    return std::string("missing");
  };
  EXPECT_EQ(status("rdma", "devices"), "pass");
  EXPECT_EQ(status("rdma", "rxe0 port 1"), "pass");
  EXPECT_EQ(status("rdma", "rxe0 port 1 gid"), "pass");
  EXPECT_EQ(status("gpu", "driver"), "fail");
  EXPECT_EQ(r.verdict, "not ready");
}

TEST(DoctorFixtures, JsonOfARealRunParses) {
  auto reports = from_json(slurp(kSoftRoce + "/doctor.json"));
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].host, "softroce");
  EXPECT_EQ(reports[0].verdict, "not ready");
  EXPECT_EQ(exit_code(reports[0]), 4);
  bool gid = false;
  for (const auto& c : reports[0].checks)
    if (c.area == "rdma" && c.name == "rxe0 port 1 gid") gid = c.status == "pass";
  EXPECT_TRUE(gid);
  // and what it says survives our own writer unchanged
  auto again = from_json(to_json(reports));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].checks.size(), reports[0].checks.size());
}
