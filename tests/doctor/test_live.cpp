// collect_local() on the machine the tests run on: it must not crash or
// throw whatever is missing, and must say what it found. On a machine
// without GPU or RDMA device (the CPU build machines) the verdict is fixed.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "doctor/doctor.h"

using namespace gdr::doctor;

namespace {
bool has_gpu() { return std::filesystem::exists("/dev/nvidiactl"); }
bool has_rdma() {
  std::error_code ec;
  return std::filesystem::exists("/sys/class/infiniband", ec) &&
         !std::filesystem::is_empty("/sys/class/infiniband", ec);
}
const Check* find_check(const Report& r, const std::string& area, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.area == area && c.name == name) return &c;
  return nullptr;
}
}  // namespace

TEST(DoctorLive, CollectsThisMachine) {
  Report r = collect_local();
  EXPECT_FALSE(r.host.empty());
  ASSERT_FALSE(r.checks.empty());
  const std::set<std::string> statuses{"pass", "warn", "fail", "n/a"};
  const std::set<std::string> areas{"gpu",      "gpudirect", "rdma",         "topology",
                                    "versions", "ceiling",   "gpu-initiated"};
  for (const auto& c : r.checks) {
    EXPECT_TRUE(statuses.count(c.status)) << c.area << "/" << c.name << ": " << c.status;
    EXPECT_TRUE(areas.count(c.area)) << c.area;
    EXPECT_FALSE(c.name.empty());
    EXPECT_FALSE(c.evidence.empty()) << c.area << "/" << c.name;
  }
  EXPECT_EQ(r.verdict, verdict_of(r.checks));
  for (const char* key : {"driver", "cuda"}) EXPECT_NE(find_check(r, "gpu", key), nullptr) << key;
  EXPECT_NE(find_check(r, "rdma", "devices"), nullptr);
  EXPECT_NE(find_check(r, "rdma", "memlock"), nullptr);
  EXPECT_NE(find_check(r, "versions", "mpi"), nullptr);
  // Report survives the trip through bytes (what MPI gathering does).
  EXPECT_EQ(from_bytes(to_bytes(r)).checks.size(), r.checks.size());
}

TEST(DoctorLive, NoGpuOrNoRdmaMeansNotReady) {
  if (has_gpu() && has_rdma()) GTEST_SKIP() << "this machine has a GPU and an RDMA device";
  Report r = collect_local();
  EXPECT_EQ(r.verdict, "not ready");
  EXPECT_EQ(exit_code(r), 4);
  if (!has_gpu()) {
    ASSERT_NE(find_check(r, "gpu", "driver"), nullptr);
    EXPECT_EQ(find_check(r, "gpu", "driver")->status, "fail");
    EXPECT_FALSE(find_check(r, "gpu", "driver")->fix.empty());
  }
  if (!has_rdma()) {
    EXPECT_EQ(find_check(r, "rdma", "devices")->status, "fail");
    EXPECT_FALSE(find_check(r, "rdma", "devices")->fix.empty());
  }
}

TEST(DoctorLive, WithoutLibrariesStillAnswers) {
  Options o;
  o.probe_libraries = false;
  Report r = collect_local(o);
  EXPECT_FALSE(r.checks.empty());
  EXPECT_EQ(r.verdict, verdict_of(r.checks));
}
