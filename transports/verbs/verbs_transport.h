// The raw verbs transport: one RC queue pair per peer, data moved by RDMA
// WRITE WITH IMMEDIATE into the buffer the receiver advertised, so the
// receiver gets a completion even for GPU memory it cannot poll.
//
// --verbs-mode (verbs_logic.h: Mode) changes only how data lands: plain RDMA
// WRITEs with one immediate per burst (write), or with the receiver polling
// the last byte (poll). Sends are posted from test(), so that a window's WRs
// go out as one list with one doorbell and only the burst's last one needs
// a completion (selective signaling).
//
// Protocol per (peer, direction), in posting order:
//   receiver: post_recv -> SEND a clear-to-send (region id, offset, length)
//   sender:   k-th post_send takes the k-th clear-to-send, checks the length,
//             writes the data (split into chunks of at most the devices'
//             max message size) with WRITE WITH IMM carrying the sequence no.
//   receiver: counts the chunks' completions; the last one completes it.
// Every SEND or WRITE WITH IMM consumes a receive WQE at the peer, so each
// needs a credit; the receiver reposts WQEs at once and RDMA-WRITEs its
// running repost count into the sender's mailbox, which needs no credit.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transports/transport.h"
#include "verbs_device.h"
#include "op_table.h"
#include "verbs_logic.h"

namespace gdr::verbs {

enum class Wr : std::uint8_t;  // work-request kinds (verbs_internal.h)

// A region registered with the HCA, with the way it was registered.
class VerbsRegion : public MemRegion {
 public:
  VerbsRegion(const Buffer& b, std::shared_ptr<DeviceContext> dev, ibv_mr* mr, int dmabuf_fd,
              std::uint32_t id, std::string mode);
  ~VerbsRegion() override;
  ibv_mr* mr() const { return mr_; }
  std::uint32_t id() const { return id_; }
  const std::string& mode() const { return mode_; }

 private:
  std::shared_ptr<DeviceContext> dev_;
  ibv_mr* mr_;
  int dmabuf_fd_;
  std::uint32_t id_;
  std::string mode_;
};

// A small registered host buffer (control slots, mailboxes).
struct HostMr {
  void* ptr = nullptr;
  ibv_mr* mr = nullptr;
  HostMr() = default;
  HostMr(ibv_pd* pd, std::size_t bytes, int access, const std::string& who);
  ~HostMr();
  HostMr(const HostMr&) = delete;
  HostMr& operator=(const HostMr&) = delete;
};

class VerbsTransport final : public Transport {
 public:
  VerbsTransport(Bootstrap& boot, const VerbsOptions& o);
  ~VerbsTransport() override;

  std::string_view name() const override { return "verbs"; }
  bool supports(MemKind k) const override;
  void connect(const std::vector<int>& peers) override;
  std::unique_ptr<MemRegion> register_memory(const Buffer& b) override;
  Request post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) override;
  Request post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) override;
  void start_posted() override { progress(); }
  bool test(const Request& req) override;
  std::vector<std::pair<std::string, std::string>> describe() const override;
  NetDevice device() const override { return {port_.device, port_.port}; }
  PathTaken path_taken(MemKind mem, std::size_t bytes, int peer) const override;
  std::string mode(MemKind k) const override;
  std::string stall_detail(int peer) const override;

 private:
  struct Op;
  struct Peer;
  struct RemoteRegion {
    std::uint64_t addr = 0, bytes = 0;
    std::uint32_t rkey = 0;
  };

  void ensure_cq(std::size_t npeers);
  std::unique_ptr<Peer> create_peer(int rank);
  void to_init(Peer& p);
  void to_rtr_rts(Peer& p, const struct WireEndpoint& ep, std::uint32_t qpn, std::uint32_t psn);
  ibv_mr* register_cuda(const Buffer& b, int& fd, std::string& mode);

  int progress();  // returns the completions it handled
  void progress_while_idle();
  int poll_cq();
  void sleep_on_cq();
  void on_completion(const ibv_wc& wc);
  void on_recv(Peer& p, const ibv_wc& wc, std::uint32_t slot);
  void on_send_done(Peer& p, const ibv_wc& wc);
  void pump(Peer& p);
  void post_ctl(Peer& p, const struct CtlMsg* m, std::size_t n);
  void post_chunk(Peer& p, std::uint64_t id, Op& op, bool last_of_burst);
  void post_credit(Peer& p);
  ibv_send_wr& append(Peer& p, Wr kind, std::uint64_t op, void* addr, std::uint32_t len,
                      std::uint32_t lkey, bool host);
  bool flush(Peer& p);
  void post_recv_slots(Peer& p, const std::uint32_t* slots, std::size_t n, bool repost);
  void flush_reposts(Peer& p);
  bool advertise(Peer& p, Op& op, std::uint64_t id, struct CtlMsg& out);
  bool arrived(Op& op, std::uint64_t id);
  void fail(Peer& p, const std::string& why);
  [[noreturn]] void raise(const Peer& p);  // throws p's error, marked as reported
  Peer& peer_of(int rank, const char* what);
  std::string wc_error(const Peer& p, const ibv_wc& wc) const;

  Bootstrap& boot_;
  PortChoice port_;
  std::shared_ptr<DeviceContext> dev_;
  ibv_cq* cq_ = nullptr;
  int cq_size_ = 0, cq_max_ = 0;
  std::uint32_t send_depth_ = 0, recv_depth_ = 0;
  std::unique_ptr<HostMr> mailbox_;  // slot r: rank r's repost count for us
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<int> peer_index_;  // rank -> peers_ index, -1: not connected
  IdTable<Op> ops_;
  std::uint64_t next_op_ = 1;
  std::uint32_t next_region_ = 0;
  std::vector<std::unordered_map<std::uint32_t, RemoteRegion>> remote_;  // [rank][id]
  std::string registration_ = "host";
  bool error_reported_ = false;  // a peer's error was thrown to a caller
  bool software_device_ = false;
  int retry_cnt_ = 7, qp_timeout_ = 14;  // RC ack timeout 4.096 us * 2^qp_timeout_
  Mode mode_ = Mode::imm;
  // Fast paths, each switchable for measurement (GDR_VERBS_INLINE, _POSTLIST,
  // _SIGNAL_EVERY, _RECV_BATCH; transports/verbs/README.md).
  std::uint32_t want_inline_ = 0, max_inline_ = 0;  // asked of, granted by the QPs; 0: off
  bool postlist_ = true, recv_batch_ = true;
  // GDR_VERBS_EAGER: an inline send is complete once posted (its bytes are in
  // the WQE), as MPI's eager sends: no wait for the peer's ack.
  bool eager_ = true;
  bool yield_ = true;  // GDR_VERBS_YIELD: sched_yield on an empty poll of a software device
  std::uint32_t signal_every_ = 1;
  // GDR_VERBS_WAIT=event: sleep on a completion channel after a short spin.
  bool wait_event_ = false;
  ibv_comp_channel* channel_ = nullptr;
  unsigned cq_events_ = 0;  // received, acknowledged at the end
  int idle_polls_ = 0;
  double spin_start_ = 0;  // the first empty poll of the current spin (yield)
};

}  // namespace gdr::verbs
