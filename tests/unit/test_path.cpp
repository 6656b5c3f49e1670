// Which path a row took and its ceiling: ceilings from a fabricated sysfs tree, UCX's path read from the
// text ucp_ep_print_info prints, MPS detection, the verdict.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "../doctor/fake_tree.h"
#include "doctor/facts.h"
#include "src/core/ceiling.h"
#include "src/core/mps.h"
#include "verdicts/path_record.h"
#include "verdicts/verdict.h"
#ifdef GDR_HAVE_UCX
#include "transports/ucx/ucx_path.h"
#endif

using gdr::doctor::test::FakeTree;

namespace {

void pci(const FakeTree& t, const std::string& bdf, const std::string& speed, const std::string& width) {
  t.write("sys/bus/pci/devices/" + bdf + "/current_link_speed", speed + "\n");
  t.write("sys/bus/pci/devices/" + bdf + "/current_link_width", width + "\n");
}

}  // namespace

// The PCIe numbers for the common links: per lane 8 GT/s x 128/130 / 8 bits.
TEST(Ceiling, PcieFromSysfs) {
  FakeTree t;
  pci(t, "0000:17:00.0", "8.0 GT/s PCIe", "8");
  pci(t, "0000:3b:00.0", "16.0 GT/s PCIe", "16");
  pci(t, "0000:9a:00.0", "32.0 GT/s PCIe", "16");
  pci(t, "0000:01:00.0", "Unknown", "0");
  auto g3 = gdr::pcie_ceiling(t.sys(), "0000:17:00.0", "GPU");
  auto g4 = gdr::pcie_ceiling(t.sys(), "0000:3B:00.0", "GPU");  // CUDA writes bus ids in upper case
  auto g5 = gdr::pcie_ceiling(t.sys(), "0000:9a:00.0", "GPU");
  ASSERT_TRUE(g3 && g4 && g5);
  EXPECT_NEAR(g3->gbps, 7.877, 0.001);
  EXPECT_NEAR(g4->gbps, 31.508, 0.001);
  EXPECT_NEAR(g5->gbps, 63.015, 0.001);
  EXPECT_NE(g4->source.find("PCIe Gen4 x16"), std::string::npos) << g4->source;
  EXPECT_NE(g5->source.find("PCIe Gen5 x16"), std::string::npos) << g5->source;
  EXPECT_FALSE(gdr::pcie_ceiling(t.sys(), "0000:01:00.0", "GPU"));  // link speed unknown
  EXPECT_FALSE(gdr::pcie_ceiling(t.sys(), "0000:02:00.0", "GPU"));  // no such function
  EXPECT_NEAR(gdr::pcie_gbps(2.5, 1), 0.25, 1e-9);                  // 8b/10b
}

// An HCA: the smaller of its port rate and its own PCIe link.
TEST(Ceiling, HcaPortAndPcie) {
  FakeTree t;
  t.write("sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  pci(t, "0000:3b:00.0", "8.0 GT/s PCIe", "16");  // Gen3 x16: 15.75 GB/s < 25 GB/s
  t.link("sys/class/infiniband/mlx5_0/device", "../../../bus/pci/devices/0000:3b:00.0");
  auto m = gdr::hca_ceiling(t.sys(), "mlx5_0:1");
  ASSERT_TRUE(m);
  EXPECT_NEAR(m->gbps, 15.754, 0.001);
  EXPECT_NE(m->source.find("HCA mlx5_0"), std::string::npos) << m->source;
  // rxe (Soft-RoCE) has no PCI function: its port rate alone.
  t.write("sys/class/infiniband/rxe0/ports/1/rate", "10 Gb/sec (1X FDR10)\n");
  auto r = gdr::hca_ceiling(t.sys(), "rxe0:1");
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->gbps, 1.25);
}

// Stages in series: the slowest known one; copy rows measured in the run win
// over the PCIe fallback; unknown links are listed.
TEST(Ceiling, PathTakesTheSlowestStage) {
  FakeTree t;
  pci(t, "0000:9a:00.0", "32.0 GT/s PCIe", "16");
  std::vector<std::string> unknown;
  auto c = gdr::path_ceiling({"copy-d2h", "copy-h2d", "shm"}, t.sys(), "0000:9a:00.0", {}, &unknown);
  EXPECT_NEAR(c.gbps, 63.015, 0.001);
  EXPECT_EQ(unknown, std::vector<std::string>{"shm"});
  unknown.clear();
  c = gdr::path_ceiling({"copy-d2h", "copy-h2d"}, t.sys(), "0000:9a:00.0",
                        {{"copy-d2h", 55.0}, {"copy-h2d", 52.5}}, &unknown);
  EXPECT_DOUBLE_EQ(c.gbps, 52.5);
  EXPECT_TRUE(unknown.empty());
  c = gdr::path_ceiling({"copy-d2d"}, t.sys(), "", {}, &unknown);
  EXPECT_EQ(c.gbps, 0);
  EXPECT_EQ(unknown, std::vector<std::string>{"copy-d2d"});
}

// The doctor shows the same ceilings before any run: per GPU, HCA, port and pair.
TEST(Ceiling, DoctorRows) {
  namespace d = gdr::doctor::detail;
  FakeTree t;
  pci(t, "0000:9a:00.0", "32.0 GT/s PCIe", "16");  // the GPU, Gen5 x16
  pci(t, "0000:9b:00.0", "16.0 GT/s PCIe", "16");  // the HCA, Gen4 x16
  gdr::doctor::Options o;
  o.sys_root = t.sys();
  o.probe_libraries = false;
  d::HcaFacts h;
  h.name = "mlx5_0";
  h.pci = "0000:9b:00.0";
  d::PortFacts port;
  port.port = 1;
  port.rate = "400 Gb/sec (4X NDR)";
  h.ports = {port};
  d::Facts f;
  f.gpu.gpus = {d::GpuFacts{"0000:9a:00.0"}};
  f.rdma.hcas = {h};
  f.topo.pairs = {{"0000:9a:00.0", "mlx5_0", d::PciClass::PIX, {}}};
  f.ceilings = d::probe_ceilings(o, {"0000:9a:00.0"}, f.rdma.hcas);
  std::vector<gdr::doctor::Check> out;
  d::assess_ceiling(f, out);
  auto evidence = [&](const std::string& name) {
    for (auto& c : out)
      if (c.area == "ceiling" && c.name == name) return c.status + ": " + c.evidence;
    return std::string("missing");
  };
  EXPECT_EQ(evidence("GPU 0000:9a:00.0"), "n/a: PCIe Gen5 x16 of GPU 0000:9a:00.0 (sysfs): 63.0 GB/s");
  EXPECT_EQ(evidence("HCA mlx5_0 0000:9b:00.0"), "n/a: PCIe Gen4 x16 of HCA mlx5_0 0000:9b:00.0 (sysfs): 31.5 GB/s");
  EXPECT_EQ(evidence("mlx5_0 port 1"), "n/a: mlx5_0 port 1 rate 400 Gb/sec (4X NDR) (sysfs): 50.00 GB/s");
  EXPECT_EQ(evidence("GPU 0000:9a:00.0 - mlx5_0"), "n/a: PIX; GPUDirect RDMA at most 31.5 GB/s (HCA mlx5_0)");
  EXPECT_NE(evidence("mps").find("CUDA MPS is not running"), std::string::npos);
}

// bibw against its ceiling: a duplex link bounds each direction, so twice its rate; a copy within
// one GPU's memory bounds both directions together when the ranks share that GPU.
TEST(Ceiling, BibwOnOneGpuIsBoundByOneCopy) {
  gdr::CaseParams bibw, bw;
  bibw.traits.directions = 2;
  bw.traits.directions = 1;
  const gdr::Ceiling d2d{2000, "copy-d2d row of this run at this size: 2000.0 GB/s"};
  const gdr::Ceiling pcie{50, "PCIe Gen5 x16 of GPU 0000:00:06.0 (sysfs): 50.4 GB/s"};
  std::string why;
  EXPECT_DOUBLE_EQ(gdr::busbw_bound(bibw, d2d, true, &why), 2000);
  EXPECT_NE(why.find("share one GPU's memory"), std::string::npos) << why;
  EXPECT_DOUBLE_EQ(gdr::busbw_bound(bibw, d2d, false, &why), 4000);  // two GPUs: each its own memory
  EXPECT_EQ(why, "");
  EXPECT_DOUBLE_EQ(gdr::busbw_bound(bibw, pcie, true, &why), 100);   // a duplex link: both ways at once
  EXPECT_DOUBLE_EQ(gdr::busbw_bound(bw, d2d, true, &why), 2000);
  EXPECT_EQ(why, "");
}

TEST(Mps, ControlSocketFound) {
  FakeTree t;
  t.mkdir("mps");
  std::string dir = t.path("mps");
  setenv("CUDA_MPS_PIPE_DIRECTORY", dir.c_str(), 1);
  EXPECT_EQ(gdr::mps_control_socket(), "");  // no daemon
  t.write("mps/control", "");                 // a plain file is not the daemon's socket
  EXPECT_EQ(gdr::mps_control_socket(), "");
  unlink((dir + "/control").c_str());
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string path = dir + "/control";
  ASSERT_LT(path.size(), sizeof a.sun_path);
  std::copy(path.begin(), path.end(), a.sun_path);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(gdr::mps_control_socket(), path);
  close(fd);
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

namespace {
gdr::CaseRecord row(const char* test, const char* mem, gdr::Path path, std::size_t bytes, double us, double busbw) {
  gdr::CaseRecord r;
  r.params.test = test;
  r.params.traits = gdr::find_test(test)->traits;
  r.params.transport = "ucx";
  r.params.mem = std::string(mem) == "cuda" ? gdr::MemKind::cuda : gdr::MemKind::host;
  r.params.path = path;
  r.params.bytes = bytes;
  r.params.src = 0;
  r.params.dst = 1;
  r.slowest.mean = us * 1e-6;
  r.busbw_gbps = busbw;
  return r;
}
}  // namespace

TEST(Verdict, BestLatencyGpuDirectAndFactor) {
  gdr::Verdict v;
  auto lat = row("latency", "cuda", gdr::Path::direct, 8, 15.0, 0.0005);
  lat.via_host = true;
  lat.via_host_cause = "eager through host";
  v.add(lat);
  auto big = row("bw", "cuda", gdr::Path::direct, 1 << 20, 10.0, 104.8);
  big.peak_gbps = 200;
  big.pct_peak = 52.4;
  v.add(big);
  v.add(row("bw", "cuda", gdr::Path::staged, 1 << 20, 50.0, 21.0));
  auto lines = v.lines({}, "");
  ASSERT_EQ(lines.size(), 2u);
  const std::string& d = lines[0];
  EXPECT_NE(d.find("ucx cuda direct: best 104.80 GB/s (bw 1048576 B, 52.4 % of peak)"), std::string::npos) << d;
  EXPECT_NE(d.find("smallest latency 15.00 us (8 B)"), std::string::npos) << d;
  EXPECT_NE(d.find("GPUDirect: yes (no host copy at 1048576 B)"), std::string::npos) << d;
  EXPECT_NE(d.find("direct/staged 5.00x (bw 1048576 B)"), std::string::npos) << d;
  EXPECT_NE(lines[1].find("peak unknown"), std::string::npos) << lines[1];
  // The largest size went through host memory: NO, with the cause and the doctor's reason.
  gdr::Verdict w;
  auto fell = row("bw", "cuda", gdr::Path::direct, 1 << 20, 10.0, 10);
  fell.via_host = true;
  fell.via_host_cause = "no rendezvous lane reaches CUDA memory";
  w.add(fell);
  lines = w.lines({{"doctor.gpudirect.peermem", "fail: nvidia_peermem not loaded"}}, "shared GPU line");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("GPUDirect: NO at 1048576 B: no rendezvous lane reaches CUDA memory; doctor: "
                          "gpudirect.peermem: fail: nvidia_peermem not loaded"),
            std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "shared GPU line");
}

// UCX's host path slower than the MPI's in the same run: the ucx line says so,
// with the mpi figure; within 0.9x nothing is said.
TEST(Verdict, SlowerThanMpiSaysSo) {
  gdr::Verdict v;
  v.add(row("bw", "host", gdr::Path::direct, 64 << 20, 10.0, 4.2));
  auto mpi = row("bw", "host", gdr::Path::direct, 64 << 20, 6.0, 6.8);
  mpi.params.transport = "mpi";
  v.add(mpi);
  auto lines = v.lines({}, "");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].find("slower"), std::string::npos) << lines[0];  // mpi's own line
  EXPECT_NE(lines[1].find("bw at 67108864 B is 0.62x the mpi transport's 6.80 GB/s in this run: ucx's own "
                          "library is slower there"), std::string::npos) << lines[1];
  gdr::Verdict w;
  w.add(row("bw", "host", gdr::Path::direct, 64 << 20, 10.0, 6.5));
  w.add(mpi);
  EXPECT_EQ(w.lines({}, "")[1].find("slower"), std::string::npos);
}

// A device row whose path nobody established never reads "GPUDirect: yes",
// even though nothing flagged it as going through host memory.
TEST(Verdict, UnknownPathIsNeverYes) {
  gdr::Verdict v;
  auto big = row("bw", "cuda", gdr::Path::direct, 1 << 20, 10.0, 104.8);
  big.params.transport = "mpi";
  big.path_unknown = "the MPI library does not report whether it moved device memory directly";
  v.add(big);
  auto lines = v.lines({}, "");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find("GPUDirect: yes"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("GPUDirect: unknown at 1048576 B (the MPI library does not report"), std::string::npos)
      << lines[0];
}

#ifdef GDR_HAVE_UCX
// Printed by Debian 12's UCX 1.13.1 for two processes on one host (host memory).
const char* kSysvCma = R"(#
# UCP endpoint
#
#               peer: <no debug data>
#                 lane[0]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] am am_bw#0
#                 lane[1]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] rma_bw#0
#
#                tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)
#            tag_send_nbr: 0..<egr/short>..93..<egr/bcopy>..262144..<rndv>..(inf)
#           tag_send_sync: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)
#
#                  rma_bw: mds rndv_rkey_size 9
#
)";

// The lanes the H200 runs in results/archive recorded (ucx.lanes =
// sysv/memory,cma/memory,cuda_ipc/cuda, UCX 1.13.1 with CUDA), in the layout
// above; the roles (cuda_ipc as a second rma_bw lane) are written by hand, as
// this machine's UCX has no CUDA.
const char* kCudaIpc = R"(#                 lane[0]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] am am_bw#0
#                 lane[1]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] rma_bw#0
#                 lane[2]:  7:cuda_ipc/cuda.0 md[6]         -> md[6]/cuda_ipc/sysdev[255] rma_bw#1
#                tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)
)";

bool by_name(const gdr::ucx::EpLane& l) { return l.tl == "cuda_ipc"; }

TEST(UcxPath, ParsesLanesAndThresholds) {
  auto info = gdr::ucx::parse_ep_info(kSysvCma);
  ASSERT_EQ(info.lanes.size(), 2u);
  EXPECT_EQ(info.lanes[0].name(), "sysv/memory");
  EXPECT_EQ(info.lanes[0].md, "sysv");
  EXPECT_TRUE(info.lanes[0].am && info.lanes[0].am_bw && !info.lanes[0].rma_bw);
  EXPECT_TRUE(info.lanes[1].rma_bw && !info.lanes[1].am);
  ASSERT_EQ(info.tag_send.size(), 3u);  // only tag_send, not _nbr/_sync
  EXPECT_EQ(gdr::ucx::proto_at(info, 8), "egr/short");
  EXPECT_EQ(gdr::ucx::proto_at(info, 93), "egr/bcopy");
  EXPECT_EQ(gdr::ucx::proto_at(info, 8255), "egr/bcopy");
  EXPECT_EQ(gdr::ucx::proto_at(info, 8256), "rndv");
  EXPECT_EQ(gdr::ucx::proto_at(info, std::size_t(1) << 40), "rndv");
}

TEST(UcxPath, HostRowsNeverFlagged) {
  auto info = gdr::ucx::parse_ep_info(kSysvCma);
  auto small = gdr::ucx::path_for(info, false, 8, by_name);
  EXPECT_EQ(small.how, "ucx egr/short over sysv/memory");
  EXPECT_FALSE(small.via_host);
  auto big = gdr::ucx::path_for(info, false, 1 << 20, by_name);
  EXPECT_EQ(big.how, "ucx rndv zcopy over cma/memory");
  EXPECT_EQ(big.links, std::vector<std::string>{"shm"});
}

// UCX_TLS=cuda_copy,sm,self: no lane reaches device memory, the silent fallback.
TEST(UcxPath, DeviceRowWithoutCudaLaneIsFlagged) {
  auto info = gdr::ucx::parse_ep_info(kSysvCma);
  auto p = gdr::ucx::path_for(info, true, 1 << 20, by_name);
  EXPECT_TRUE(p.via_host);
  EXPECT_NE(p.cause.find("no rendezvous lane of this endpoint reaches CUDA memory"), std::string::npos) << p.cause;
  EXPECT_NE(p.how.find("through host bounce buffers"), std::string::npos) << p.how;
  EXPECT_EQ(p.links.front(), "copy-d2h");
}

TEST(UcxPath, DeviceRowOverCudaIpcIsDirect) {
  auto info = gdr::ucx::parse_ep_info(kCudaIpc);
  auto p = gdr::ucx::path_for(info, true, 1 << 20, by_name);
  EXPECT_FALSE(p.via_host);
  EXPECT_EQ(p.how, "ucx rndv zcopy over cuda_ipc/cuda");
  EXPECT_EQ(p.links, std::vector<std::string>{"copy-d2d"});
  // Host rows do not count the cuda_ipc lane.
  EXPECT_EQ(gdr::ucx::path_for(info, false, 1 << 20, by_name).how, "ucx rndv zcopy over cma/memory");
  // Eager device messages are packed through a host buffer.
  auto small = gdr::ucx::path_for(info, true, 8, by_name);
  EXPECT_TRUE(small.via_host);
  EXPECT_EQ(small.how, "ucx egr/bcopy over sysv/memory");
}

// ucp_request_query's info strings of the UCX 1.22 wheel (protocols v2),
// printed for sends between two processes on this machine (host memory).
TEST(UcxPath, ParsesSendInfoOfProtocolsV2) {
  auto s = gdr::ucx::parse_send_info("{proto|init|rk_use} tag_send from host memory length 4194304 rendezvous "
                                     "zero-copy read from remote cma/memory 11214.5 MB/s 356.68 us");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->mem, "host");
  EXPECT_EQ(s->bytes, 4194304u);
  EXPECT_EQ(s->desc, "rendezvous zero-copy read from remote");
  ASSERT_EQ(s->lanes.size(), 1u);
  EXPECT_EQ(s->lanes[0].name(), "cma/memory");
  auto p = gdr::ucx::path_from_send(*s, false, by_name);
  EXPECT_EQ(p.how, "ucx rendezvous zero-copy read from remote over cma/memory");
  EXPECT_EQ(p.links, std::vector<std::string>{"shm"});
  EXPECT_TRUE(p.unknown.empty()) << p.unknown;
  auto e = gdr::ucx::parse_send_info(
      "{cpml|proto} tag_send from host memory length 4096 eager copy-in copy-out sysv/memory 2638.7 MB/s 1.48 us");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->desc, "eager copy-in copy-out");
  EXPECT_FALSE(gdr::ucx::path_from_send(*e, false, by_name).via_host);  // host rows are never flagged
  // UCX 1.13's answer (protocols v1) is not in this form: the printout is used instead.
  EXPECT_FALSE(gdr::ucx::parse_send_info("flags:0x44000 send length 65536 ucp_proto_progress_tag_rndv_rts() "
                                         "lane[0]:  3:sysv/memory.0 md[2] -> md[2]/sysv/sysdev[255] am am_bw#0"
                                         "host memory").has_value());
}

TEST(UcxPath, DeviceSendsFromProtocolsV2) {
  using gdr::ucx::parse_send_info, gdr::ucx::path_from_send;
  // As UCX 1.22 said it on the H200 (two ranks on one GPU).
  auto h200 = parse_send_info("{proto|init|rk_use} tag_send from cuda/GPU0 length 4194304 rendezvous zero-copy "
                              "flushed write to remote cuda_ipc/cuda 239360.4 MB/s 16.71 us");
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->mem, "cuda/GPU0");
  EXPECT_EQ(h200->bytes, 4194304u);
  auto write = path_from_send(*h200, true, by_name);
  EXPECT_FALSE(write.via_host);
  EXPECT_TRUE(write.unknown.empty()) << write.unknown;
  EXPECT_EQ(write.how, "ucx rendezvous zero-copy flushed write to remote over cuda_ipc/cuda");
  // Zero-copy over cuda_ipc: direct, bounded by a device copy.
  auto ipc = path_from_send(*parse_send_info("{proto|init|rk_use} tag_send from cuda memory length 1048576 "
                                             "rendezvous zero-copy read from remote cuda_ipc/cuda 1.0 MB/s 1 us"),
                            true, by_name);
  EXPECT_FALSE(ipc.via_host);
  EXPECT_TRUE(ipc.unknown.empty()) << ipc.unknown;
  EXPECT_EQ(ipc.links, std::vector<std::string>{"copy-d2d"});
  // Copy-in/copy-out through a host buffer: flagged, with UCX's own words.
  auto eager = path_from_send(*parse_send_info("{cpml|proto} tag_send from cuda memory length 8 eager copy-in "
                                               "copy-out sysv/memory,cuda_copy/cuda 1.0 MB/s 1 us"),
                              true, by_name);
  EXPECT_TRUE(eager.via_host);
  EXPECT_NE(eager.cause.find("'eager copy-in copy-out'"), std::string::npos) << eager.cause;
  EXPECT_EQ(eager.links.front(), "copy-d2h");
  // Zero-copy over a transport that cannot touch CUDA memory: flagged too.
  auto tcp = path_from_send(*parse_send_info("{proto} tag_send from cuda memory length 1048576 rendezvous "
                                             "zero-copy read from remote tcp/lo 1.0 MB/s 1 us"),
                            true, by_name);
  EXPECT_TRUE(tcp.via_host);
  // A protocol gdrbench does not know: unknown, neither direct nor staged.
  auto odd = path_from_send(*parse_send_info("{proto} tag_send from cuda memory length 1048576 rendezvous "
                                             "something new cuda_ipc/cuda 1.0 MB/s 1 us"),
                            true, by_name);
  EXPECT_FALSE(odd.via_host);
  EXPECT_NE(odd.unknown.find("'rendezvous something new'"), std::string::npos) << odd.unknown;
}

// UCX 1.22's printout: a protocol table per memory type, filled as sizes are used.
TEST(UcxPath, ProtocolTableOfProtocolsV2) {
  const char* text = R"(#
# +--------------+-------------------------------------------+-------------+
# | ucp_context_0 intra-node cfg#0                                         |
# | tagged message by ucp_tag_send*(fast-completion) from host memory      |
# +--------------+-------------------------------------------+-------------+
# |        0..92 | eager short                               | sysv/memory |
# |    256K..inf | (?) rendezvous zero-copy read from remote | cma/memory  |
# +-----------+-------------------------------------------+-------------+
# | ucp_context_0 intra-node cfg#0                                      |
# | tagged message by ucp_tag_send* from host memory                    |
# +-----------+-------------------------------------------+-------------+
# |   Range   |                Description                |   Config    |
# +-----------+-------------------------------------------+-------------+
# |     0..92 | eager short                               | sysv/memory |
# |  93..5028 | eager copy-in copy-out                    | sysv/memory |
# | 5029..inf | (?) rendezvous zero-copy read from remote | cma/memory  |
# +-----------+-------------------------------------------+-------------+
)";
  auto big = gdr::ucx::proto_table_row(text, "host", 1 << 20);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->desc, "rendezvous zero-copy read from remote");
  EXPECT_EQ(big->lanes.at(0).name(), "cma/memory");
  auto mid = gdr::ucx::proto_table_row(text, "host", 4096);  // not the fast-completion table's row
  ASSERT_TRUE(mid.has_value());
  EXPECT_EQ(mid->desc, "eager copy-in copy-out");
  EXPECT_FALSE(gdr::ucx::proto_table_row(text, "cuda", 4096).has_value());
  // A memory named in several words still parses.
  auto cuda = gdr::ucx::parse_send_info("{proto} tag_send from cuda GPU0 memory length 64 eager short sysv/memory");
  ASSERT_TRUE(cuda.has_value());
  EXPECT_EQ(cuda->mem, "cuda GPU0");
}

// UCX 1.22 prints no tag_send ranges: without a queried send the path is unknown.
TEST(UcxPath, NoRangeIsUnknown) {
  auto info = gdr::ucx::parse_ep_info("#                 lane[0]:  3:sysv/memory.0 md[2]           -> "
                                      "md[2]/sysv/sysdev[255] seg 4294967295 am\n");
  auto p = gdr::ucx::path_for(info, true, 1 << 20, by_name);
  EXPECT_FALSE(p.via_host);
  EXPECT_NE(p.unknown.find("no tag_send ranges"), std::string::npos) << p.unknown;
}

// uct_md_query on this machine's UCX (Debian's has no CUDA): host-only domains.
TEST(UcxPath, HostDomainsDoNotReachCuda) {
  gdr::ucx::EpLane cma{"cma", "memory", "cma"};
  EXPECT_FALSE(gdr::ucx::md_reaches_cuda(cma));
}
#endif

// Host rows through shared memory: bounded by a memcpy of their size class, its source named; a row
// under half its ceiling says why (small messages) or that it is not known. Given numbers only.
TEST(Ceiling, HostRowsAgainstAMeasuredMemcpy) {
  const gdr::Ceiling m = gdr::memcpy_ceiling(12.34, 1 << 20);
  EXPECT_DOUBLE_EQ(m.gbps, 12.34);
  EXPECT_EQ(m.source.rfind("memcpy 12.3 GB/s measured (1048576 B", 0), 0u) << m.source;
  EXPECT_EQ(gdr::memcpy_ceiling(0, 4096).gbps, 0);  // nothing measured: no ceiling
  gdr::CaseParams bw, bibw;
  bw.traits.directions = 1;
  bibw.traits.directions = 2;
  // bibw moves both ways at once, each a copy by its own process: twice one memcpy.
  EXPECT_DOUBLE_EQ(gdr::busbw_bound(bibw, m, false, nullptr), 2 * 12.34);
  EXPECT_DOUBLE_EQ(gdr::busbw_bound(bw, m, false, nullptr), 12.34);
  bw.bytes = 8;
  EXPECT_NE(gdr::under_half_note(bw, 3.0).find("cost of each message"), std::string::npos);
  EXPECT_EQ(gdr::under_half_note(bw, 50.0), "");
  bw.bytes = 64 << 20;
  EXPECT_EQ(gdr::under_half_note(bw, 49.9), "under half its ceiling: unknown why");
  EXPECT_EQ(gdr::under_half_note(bw, 97.0), "");
  std::size_t cls = 0;
  const double rate = gdr::host_memcpy_gbps(5000, &cls);  // measured here: only its class is asserted
  EXPECT_EQ(cls, 8192u);
  EXPECT_GT(rate, 0);
  EXPECT_EQ(gdr::host_memcpy_gbps(8192), rate);  // once a process and class
  EXPECT_EQ(gdr::memcpy_class(8), 4096u);
  EXPECT_EQ(gdr::memcpy_class(std::size_t{1} << 31), std::size_t{64} << 20);  // not a 2 GiB copy
}
