// Reports as data: JSON and byte round trips, majority comparison, table,
// metadata pairs, exit codes.
#include <gtest/gtest.h>

#include <stdexcept>

#include "doctor/doctor.h"

using namespace gdr::doctor;

namespace {

Report node(const std::string& host, const std::string& port_status = "pass",
            const std::string& ucx = "UCX 1.19.0, memory types: host, cuda") {
  Report r;
  r.host = host;
  r.checks = {
      {"gpu", "driver", "pass", "NVIDIA driver 580.159.04, 1 GPU(s) seen by NVML", ""},
      {"rdma", "mlx5_0 port 1", port_status, "ACTIVE (LinkUp), InfiniBand, MTU 4096, \"400\" Gb/sec",
       port_status == "pass" ? "" : "check the cable"},
      {"rdma", "mlx5_0 port 1 gid", "pass", "RoCE v2 GID index 3: ::ffff:10.0.0." + host.substr(4), ""},
      {"versions", "ucx", "pass", ucx, ""},
  };
  r.verdict = verdict_of(r.checks);
  return r;
}

}  // namespace

TEST(DoctorReport, VerdictAndExitCodes) {
  EXPECT_EQ(verdict_of({}), "ready");
  EXPECT_EQ(verdict_of({{"a", "b", "n/a", "", ""}, {"a", "c", "pass", "", ""}}), "ready");
  EXPECT_EQ(verdict_of({{"a", "b", "warn", "", ""}, {"a", "c", "pass", "", ""}}), "degraded");
  EXPECT_EQ(verdict_of({{"a", "b", "warn", "", ""}, {"a", "c", "fail", "", ""}}), "not ready");
  EXPECT_EQ(exit_code(node("node1")), 0);
  EXPECT_EQ(exit_code(node("node1", "warn")), 3);
  EXPECT_EQ(exit_code(node("node1", "fail")), 4);
  EXPECT_EQ(exit_code(std::vector<Report>{node("node1"), node("node2", "warn")}), 3);
  EXPECT_EQ(exit_code(std::vector<Report>{node("node1", "fail"), node("node2", "warn")}), 4);
  EXPECT_EQ(exit_code(std::vector<Report>{}), 0);
}

TEST(DoctorReport, JsonRoundTrip) {
  std::vector<Report> in{node("node1"), node("node2", "fail")};
  in[0].checks[0].evidence = "quotes \" backslash \\ tab \t unicode \xc3\xa9";
  std::string text = to_json(in);
  auto out = from_json(text);
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].host, in[i].host);
    EXPECT_EQ(out[i].verdict, in[i].verdict);
    ASSERT_EQ(out[i].checks.size(), in[i].checks.size());
    for (size_t k = 0; k < in[i].checks.size(); ++k) {
      EXPECT_EQ(out[i].checks[k].area, in[i].checks[k].area);
      EXPECT_EQ(out[i].checks[k].name, in[i].checks[k].name);
      EXPECT_EQ(out[i].checks[k].status, in[i].checks[k].status);
      EXPECT_EQ(out[i].checks[k].evidence, in[i].checks[k].evidence);
      EXPECT_EQ(out[i].checks[k].fix, in[i].checks[k].fix);
    }
  }
  EXPECT_NE(text.find("\"schema\": \"gdrbench-doctor\""), std::string::npos);
  EXPECT_NE(text.find("\"exit_code\": 4"), std::string::npos);
  EXPECT_NE(text.find("\"verdict\": \"not ready\""), std::string::npos);
}

TEST(DoctorReport, JsonRejectsWhatItDidNotWrite) {
  EXPECT_THROW(from_json("not json"), std::runtime_error);
  EXPECT_THROW(from_json(R"({"schema":"other","version":1,"reports":[]})"), std::runtime_error);
  EXPECT_THROW(from_json(R"({"schema":"gdrbench-doctor","version":2,"reports":[]})"), std::runtime_error);
  EXPECT_THROW(from_json(R"({"schema":"gdrbench-doctor","version":1,"reports":[
      {"host":"h","verdict":"ready","checks":[{"area":"a","name":"b","status":"ok"}]}]})"),
               std::runtime_error);
  EXPECT_THROW(from_json(R"({"schema":"gdrbench-doctor","version":1,"reports":[
      {"host":"h","verdict":"fine","checks":[]}]})"),
               std::runtime_error);
}

TEST(DoctorReport, BytesRoundTrip) {
  Report in = node("node7", "warn");
  auto bytes = to_bytes(in);
  Report out = from_bytes(bytes);
  EXPECT_EQ(out.host, "node7");
  EXPECT_EQ(out.verdict, "degraded");
  ASSERT_EQ(out.checks.size(), in.checks.size());
  EXPECT_EQ(out.checks[1].fix, "check the cable");
  bytes.resize(bytes.size() / 2);
  EXPECT_THROW(from_bytes(bytes), std::runtime_error);
}

TEST(DoctorReport, MajorityDifferences) {
  std::vector<Report> r{node("node1"), node("node2"), node("node3", "fail"), node("node4")};
  r[3].checks[3].evidence = "UCX 1.13.1, memory types: host, cuda";  // a different UCX
  r[1].checks.pop_back();                                          // no UCX at all
  auto d = differences(r);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_TRUE(d[0].empty());
  ASSERT_EQ(d[1].size(), 1u);
  EXPECT_NE(d[1][0].find("versions/ucx: absent"), std::string::npos);
  ASSERT_EQ(d[2].size(), 1u);
  EXPECT_EQ(d[2][0].rfind("rdma/mlx5_0 port 1: fail", 0), 0u) << d[2][0];
  EXPECT_NE(d[2][0].find("3 of 4 nodes: pass"), std::string::npos) << d[2][0];
  ASSERT_EQ(d[3].size(), 1u);  // version text is compared, GIDs (host-specific) are not
  EXPECT_NE(d[3][0].find("UCX 1.13.1"), std::string::npos);

  EXPECT_TRUE(differences({node("solo")})[0].empty());
  EXPECT_TRUE(differences({}).empty());
}

TEST(DoctorReport, TableOneNode) {
  std::string t = to_table({node("node1", "fail")});
  EXPECT_NE(t.find("node1: GPUDirect RDMA not ready (exit 4)"), std::string::npos) << t;
  EXPECT_NE(t.find("mlx5_0 port 1"), std::string::npos);
  EXPECT_NE(t.find("fix: check the cable"), std::string::npos);
}

TEST(DoctorReport, TablePointsOutTheOddNode) {
  std::string t = to_table({node("node1"), node("node2", "fail"), node("node3")});
  EXPECT_NE(t.find("3 nodes: 2 ready, 1 not ready (exit 4)"), std::string::npos) << t;
  EXPECT_NE(t.find("Checks of node1 (as on 2 of 3 nodes)"), std::string::npos) << t;
  auto odd = t.find("Nodes that differ from the majority:");
  ASSERT_NE(odd, std::string::npos) << t;
  EXPECT_NE(t.find("node2 (not ready)", odd), std::string::npos) << t;
  EXPECT_NE(t.find("fix: check the cable", odd), std::string::npos) << t;

  std::string same = to_table({node("node1"), node("node2")});
  EXPECT_NE(same.find("all nodes agree"), std::string::npos) << same;
  EXPECT_EQ(same.find("differ"), std::string::npos) << same;
}

TEST(DoctorReport, JsonMarksTheOddNode) {
  auto text = to_json({node("node1"), node("node2", "fail"), node("node3")});
  auto pos = text.find("\"differs_from_majority\": [\n        \"rdma/mlx5_0 port 1: fail");
  EXPECT_NE(pos, std::string::npos) << text;
}

TEST(DoctorReport, FlattenForMetadata) {
  auto kv = flatten(node("node1", "warn"));
  ASSERT_GE(kv.size(), 3u);
  EXPECT_EQ(kv[0], (std::pair<std::string, std::string>{"doctor.host", "node1"}));
  EXPECT_EQ(kv[1], (std::pair<std::string, std::string>{"doctor.verdict", "degraded"}));
  bool found = false;
  for (const auto& [k, v] : kv)
    if (k == "doctor.rdma.mlx5_0_port_1") {
      found = true;
      EXPECT_EQ(v.rfind("warn: ACTIVE", 0), 0u) << v;
    }
  EXPECT_TRUE(found);
}

TEST(DoctorReport, FlattenSeveralHosts) {
  auto kv = flatten(std::vector<Report>{node("node1"), node("node2", "fail")});
  ASSERT_GE(kv.size(), 4u);
  EXPECT_EQ(kv[0], (std::pair<std::string, std::string>{"doctor.verdict", "not ready"}));
  EXPECT_EQ(kv[1], (std::pair<std::string, std::string>{"doctor.hosts", "node1,node2"}));
  EXPECT_EQ(kv[2], (std::pair<std::string, std::string>{"doctor.node1.verdict", "ready"}));
  int per_host = 0;
  for (const auto& [k, v] : kv)
    if (k == "doctor.node2.rdma.mlx5_0_port_1") {
      ++per_host;
      EXPECT_EQ(v.rfind("fail: ", 0), 0u) << v;
    }
  EXPECT_EQ(per_host, 1);
}
