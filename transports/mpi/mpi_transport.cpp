// MPI point-to-point as the wire: non-blocking MPI_Isend/MPI_Irecv of bytes
// on a private communicator. MPI's per-(source, tag) ordering gives the
// interface's posting-order matching for free. Device memory goes as device
// pointers where the MPI is CUDA-aware (src/core/mpi_cuda_aware.h says how that is told).
#include <fmt/format.h>

#include <cstdlib>
#include <mpi.h>

#include <algorithm>
#include <climits>

#include "src/core/bootstrap.h"
#include "src/doctor/doctor.h"
#include "src/core/errors.h"
#include "src/core/mpi_cuda_aware.h"
#include "transports/transport.h"

namespace gdr {
namespace {

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(Bootstrap& boot) : boot_(boot) {
    MPI_Comm_dup(boot.comm(), &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiTransport() override { MPI_Comm_free(&comm_); }

  std::string_view name() const override { return "mpi"; }
  bool supports(MemKind k) const override {
    return k == MemKind::host || (k == MemKind::cuda && mpi::cuda_awareness().aware);
  }
  std::string unsupported_reason(MemKind k) const override {
    return k == MemKind::cuda ? mpi::cuda_awareness_line() : std::string();
  }
  void connect(const std::vector<int>&) override {}  // MPI is already wired up
  // 64 pre-posted device receives cost Open MPI 4.1.6 over UCX 1.22 ~8 % of 8 B
  // latency under MPS (results/archive/20261203_h200_mpi-latency-probe.txt).
  bool latency_preposts_receives() const override { return false; }
  std::unique_ptr<MemRegion> register_memory(const Buffer& b) override {
    return std::make_unique<MemRegion>(b);
  }

  Request post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, r.at(off), len, true);
  }
  Request post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, r.at(off), len, false);
  }

  bool test(const Request& req) override {
    Slot& s = slots_[req.id];
    int done = 0;
    s.status.resize(s.reqs.size());
    // One piece (every message under 1 GiB): MPI_Test, which progresses and
    // looks again in the same call; MPI_Testall only looks before it progresses,
    // so a message that progress completes costs it one more call.
    int rc = s.reqs.size() == 1
                 ? MPI_Test(s.reqs.data(), &done, req.is_send ? MPI_STATUS_IGNORE : s.status.data())
                 : MPI_Testall(static_cast<int>(s.reqs.size()), s.reqs.data(), &done,
                               req.is_send ? MPI_STATUSES_IGNORE : s.status.data());
    if (rc != MPI_SUCCESS)
      throw RunError(fmt::format("{}: MPI_Testall on a {} {} failed: {}", boot_.me(),
                                 req.is_send ? "send to" : "receive from", boot_.who(req.peer),
                                 error_text(req.is_send ? MPI_STATUSES_IGNORE : s.status.data(), s.reqs.size(), rc)));
    if (!done) return false;
    s.reqs.clear();
    free_.push_back(req.id);
    if (!req.is_send) check_length(req, s.status);
    return true;
  }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    return {{"mpi.library", std::string(v, len)}};
  }

  // Open MPI does not say which PML/BTL it selected (no MPI_T variable holds
  // the choice), so the row records the selection request it ran under as
  // the MPI reports it (MPI_T control variables `pml` and `btl`: the
  // environment, mpirun --mca and openmpi-mca-params.conf together), named
  // as such, and whether the peer shares this host.
  // MPI names no path, so device rows stay "unknown" unless their speed
  // rules out staging (src/verdicts/path_record.cpp); their ceiling is the link a
  // direct transfer would cross: a device copy on one host, the network and
  // the GPU's PCIe link across hosts.
  PathTaken path_taken(MemKind mem, std::size_t, int peer) const override {
    if (mca_.empty()) mca_ = fmt::format("pml {}, btl {}", cvar("pml"), cvar("btl"));
    bool same_host = boot_.hosts().at(peer) == boot_.host();
    PathTaken p;
    p.how = fmt::format("mpi MPI_Isend/MPI_Irecv to a peer on {} host; MCA request: {} "
                        "(the selection itself is not queryable)",
                        same_host ? "the same" : "another", mca_);
    if (mem == MemKind::host) {
      p.links = {same_host ? "shm" : "net"};
      return p;
    }
    p.links = same_host ? std::vector<std::string>{"copy-d2d"} : std::vector<std::string>{"net", "gpu"};
    p.unknown = "the MPI library does not report whether it moved device memory directly or through host "
                "buffers, and no host copy rows of this size ran to rule staging out by speed "
                "(-R copy-d2h,copy-h2d)";
    return p;
  }

 private:
  struct Slot {
    std::vector<MPI_Request> reqs;
    std::vector<MPI_Status> status;
  };

  // The failing request's own error where MPI gives one (MPI_ERR_IN_STATUS),
  // as MPI's text ("MPI_ERR_TRUNCATE: message truncated").
  static std::string error_text(const MPI_Status* status, std::size_t n, int rc) {
    if (rc == MPI_ERR_IN_STATUS && status != MPI_STATUSES_IGNORE)
      for (std::size_t i = 0; i < n; ++i)
        if (status[i].MPI_ERROR != MPI_SUCCESS) rc = status[i].MPI_ERROR;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return fmt::format("code {}", rc);
    return fmt::format("{} (code {})", std::string(text, len), rc);
  }

  // MPI accepts a shorter message into a longer receive; the interface
  // requires equal lengths, so a short one is an error naming the peer.
  void check_length(const Request& req, const std::vector<MPI_Status>& status) const {
    std::size_t got = 0;
    for (const MPI_Status& st : status) {
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      got += static_cast<std::size_t>(n);
    }
    if (got != req.bytes)
      throw RunError(fmt::format("{}: a receive from {} of {} B got a message of {} B (lengths must match)",
                                 boot_.me(), boot_.who(req.peer), req.bytes, got));
  }

  // Messages over INT_MAX bytes go as several pieces; both sides cut alike.
  Request post(int peer, std::byte* p, std::size_t len, bool send) {
    std::uint64_t id;
    if (free_.empty()) { id = slots_.size(); slots_.emplace_back(); }
    else { id = free_.back(); free_.pop_back(); }
    Slot& s = slots_[id];
    constexpr std::size_t kMax = 1ull << 30;
    std::size_t done = 0;
    do {
      std::size_t piece = std::min(kMax, len - done);
      MPI_Request r;
      int rc = send ? MPI_Isend(p + done, static_cast<int>(piece), MPI_BYTE, peer, 0, comm_, &r)
                    : MPI_Irecv(p + done, static_cast<int>(piece), MPI_BYTE, peer, 0, comm_, &r);
      if (rc != MPI_SUCCESS)
        throw RunError(fmt::format("{}: {} of {} B {} {} failed (code {})", boot_.me(),
                                   send ? "MPI_Isend" : "MPI_Irecv", piece, send ? "to" : "from",
                                   boot_.who(peer), rc));
      s.reqs.push_back(r);
      done += piece;
    } while (done < len);
    return Request{id, peer, send, len};
  }

  // A string control variable through MPI_T ("" -> "default", unknown -> "?").
  static std::string cvar(const char* want) {
    int provided = 0, n = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "?";
    std::string value = "?";
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n && value == "?"; ++i) {
      char name[256], desc[8];
      int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, bind = 0, scope = 0, count = 0;
      MPI_Datatype type;
      MPI_T_enum e;
      if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &e, desc, &desc_len, &bind, &scope) !=
              MPI_SUCCESS || std::string(name) != want || type != MPI_CHAR || bind != MPI_T_BIND_NO_OBJECT)
        continue;
      MPI_T_cvar_handle h;
      if (MPI_T_cvar_handle_alloc(i, nullptr, &h, &count) != MPI_SUCCESS) continue;
      std::string buf(static_cast<std::size_t>(std::max(count, 1)) + 1, '\0');
      if (MPI_T_cvar_read(h, buf.data()) == MPI_SUCCESS) value = buf.c_str();
      MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return value.empty() ? "default" : value;
  }

  Bootstrap& boot_;
  mutable std::string mca_;  // "pml ^ucx, btl ^uct,openib,ofi", read once
  MPI_Comm comm_;
  std::vector<Slot> slots_;
  std::vector<std::uint64_t> free_;
};

GDR_REGISTER_TRANSPORT(reg_mpi, "mpi",
                       "MPI point-to-point (MPI_Isend/MPI_Irecv); device memory where the MPI is CUDA-aware",
                       [] { return std::string(); },
                       [](Bootstrap& b, const Settings&) { return std::make_unique<MpiTransport>(b); },
                       [](MemKind k) {
                         return k == MemKind::cuda ? mpi::device_memory_reason_for_list()
                                                   : fmt::format("MPI takes host and cuda memory, not {}", mem_name(k));
                       });
// -m cuda --path direct needs a CUDA-aware MPI (the doctor's versions/mpi).
GDR_REGISTER_READINESS(reg_mpi_readiness, "mpi", [](const doctor::Check& c, bool cuda_direct) {
  return cuda_direct && c.area == "versions" && c.name == "mpi" ? doctor::Weight::strict : doctor::Weight::ignored;
});

}  // namespace
}  // namespace gdr
