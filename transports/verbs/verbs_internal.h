// Private to the verbs transport's .cpp files: wire formats, constants,
// work-request ids and the transport's per-operation and per-peer state.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "verbs_logic.h"
#include "verbs_transport.h"

namespace gdr::verbs {

// ---- wire formats (same binary on every rank, so plain structs) ----

struct WireEndpoint {
  std::uint32_t version = 1;
  std::uint16_t lid = 0;
  std::uint8_t ethernet = 0, port = 0;
  std::int32_t gid_index = -1;
  std::uint8_t gid[16] = {};
  std::int32_t active_mtu = 0;
  std::uint32_t max_msg_sz = 0;
  std::uint64_t mailbox_addr = 0;
  std::uint32_t mailbox_rkey = 0;
  std::uint32_t n_qps = 0;  // followed by n_qps WireQp
};
struct WireQp {
  std::int32_t peer;
  std::uint32_t qpn, psn;
};
struct WireRegion {
  std::uint64_t addr, bytes;
  std::uint32_t rkey, ok;
};

// A clear-to-send: "write your next message to me here". `flags`: bit 0 set
// when the receiver polls the range's last byte (poll mode), bits 8-15 the
// sentinel it stored there.
struct CtlMsg {
  std::uint32_t magic;
  std::uint32_t region;
  std::uint64_t offset, length;
  std::uint32_t seq, flags;
};
constexpr std::uint32_t kCtsPoll = 1;
constexpr std::uint32_t kCtsMagic = 0x67647243;  // "gdrC"
// One control SEND carries the clear-to-sends of up to kCtsPerSend receives
// posted together (a latency batch's 65, a bw window's 16): one SEND, one
// receive WQE and one completion at the sender instead of one per receive.
// On rxe each SEND is kernel work on the CPUs the ranks spin on; one per
// receive made a ping-pong batch's first round trip take 1.5-2.9 ms.
constexpr std::size_t kCtsPerSend = 15;
constexpr std::size_t kSlotBytes = 512;  // a receive slot holds one control SEND
static_assert(sizeof(CtlMsg) * kCtsPerSend <= kSlotBytes);

constexpr std::uint32_t kSendDepth = 256;
constexpr std::uint32_t kRecvDepth = 256;
constexpr std::uint32_t kAnnounceBatch = 32;
constexpr std::uint64_t kMaxChunk = 1ull << 30;
constexpr std::uint32_t kWantInline = 220;      // perftest's default for RC
constexpr int kSpinPolls = 64;                  // GDR_VERBS_WAIT=event: empty polls before sleeping
// A software device: how long a wait spins before each further empty poll
// yields the CPU. A round trip's wait (100-200 us in the qemu guest) ends
// within it, as ib_send_lat's, which never yields (yielding from the first
// empty poll made imm latency 1.2-1.33x slower there); a bandwidth window
// of MiB messages (10-20 ms each) yields, so the kernel moving the data
// gets the CPU.
constexpr double kSpinBeforeYieldS = 1e-3;
constexpr int kSleepMs = 1;  // the longest sleep: credits and poll-mode data make no completion
constexpr int kSoftQpTimeout = 16;  // ack timeout exponent on rxe/siw: 268 ms a try (verbs_connect.cpp)
constexpr std::uint32_t kRxeVendorId = 0xffffff;  // Soft-RoCE
constexpr std::uint32_t kSiwVendorId = 0x626d74;  // soft iWARP ("bmt")
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// wr_id: kind in the top byte, peer index, then a slot number.
enum class Wr : std::uint8_t { recv = 1, ctl = 2, data = 3, credit = 4 };
inline std::uint64_t wr_id(Wr k, std::size_t peer, std::uint32_t slot) {
  return (std::uint64_t(k) << 56) | (std::uint64_t(peer) << 24) | slot;
}
inline Wr wr_kind(std::uint64_t id) { return static_cast<Wr>(id >> 56); }
inline std::size_t wr_peer(std::uint64_t id) { return (id >> 24) & 0xffffffffu; }
inline std::uint32_t wr_slot(std::uint64_t id) { return id & 0xffffffu; }
inline const char* wr_name(Wr k) {
  switch (k) {
    case Wr::recv: return "receive";
    case Wr::ctl: return "SEND (clear-to-send)";
    case Wr::data: return "RDMA WRITE (data)";
    case Wr::credit: return "RDMA WRITE (credits)";
  }
  return "?";
}

// ---- state ----

struct VerbsTransport::Op {
  bool is_send = false;
  std::size_t peer = 0;  // index into peers_
  VerbsRegion* region = nullptr;
  std::size_t off = 0, len = 0, nchunks = 1, posted = 0, completed = 0;
  std::uint32_t seq = 0;
  bool matched = false;  // send: has its clear-to-send
  std::uint64_t raddr = 0;
  std::uint32_t rkey = 0;
  bool poll = false;          // recv: arrival seen in the last byte; send: the peer polls so
  std::uint8_t sentinel = 0;  // what that last byte holds until the data lands
  bool done = false;
};

// A send WR posted and not yet reaped: its posting index (in wr_id) tells
// which unsignaled WRs a signaled completion covers.
struct SqEntry {
  Wr kind;
  std::uint64_t op;
  std::uint32_t index;
};

struct VerbsTransport::Peer {
  int rank = -1;
  std::size_t index = 0;
  ibv_qp* qp = nullptr;
  std::unique_ptr<HostMr> slots;  // recv_depth receive slots, then send_depth send slots
  std::size_t chunk = kMaxChunk;
  int path_mtu = 0;
  std::uint64_t remote_mailbox = 0;
  std::uint32_t remote_mailbox_rkey = 0;
  CreditWindow credits;
  RepostCounter reposts;
  std::uint64_t sq_posted = 0;
  std::deque<SqEntry> sq;  // posted send WRs, completed in order
  SignalPolicy signals;
  // WRs built by pump(), posted by flush() (one doorbell with postlist).
  std::vector<ibv_send_wr> batch;
  std::vector<ibv_sge> batch_sge;
  bool batch_waited = false;              // a WR of the batch completes an op someone waits on
  std::vector<std::uint64_t> batch_eager;  // inline sends complete once the batch is posted
  std::vector<std::uint32_t> repost;  // receive slots consumed, reposted after a CQ pass
  std::deque<std::uint64_t> recv_unadvertised, recv_advertised, sends_unposted;
  std::deque<CtlMsg> cts;
  std::uint32_t send_seq = 0, recv_seq = 0, my_psn = 0;
  // For a stall's message: immediates posted / completed here, and their last seq.
  std::uint64_t imms_sent = 0, imms_received = 0;
  std::uint32_t last_imm_sent = 0, last_imm_received = 0;
  std::uint32_t send_depth = 0;
  std::string error;
  bool sq_full() const { return sq.size() >= send_depth; }
  std::byte* recv_slot(std::uint32_t i) const {
    return static_cast<std::byte*>(slots->ptr) + std::size_t(i) * kSlotBytes;
  }
};

}  // namespace gdr::verbs
