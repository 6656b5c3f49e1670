#include "verbs_transport.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <sched.h>

#include <fmt/format.h>

#include "../../src/bootstrap.h"
#include "../../src/errors.h"
#include "verbs_internal.h"

namespace gdr::verbs {

// ---- operations ----

VerbsTransport::Peer& VerbsTransport::peer_of(int rank, const char* what) {
  auto it = peer_index_.find(rank);
  if (it == peer_index_.end())
    throw RunError(fmt::format("{}: verbs: {} with {}, which connect() was not given", boot_.me(),
                               what, boot_.who(rank)));
  Peer& p = *peers_[it->second];
  if (!p.error.empty()) throw RunError(p.error);
  return p;
}

namespace {
VerbsRegion& verbs_region(MemRegion& r, std::size_t off, std::size_t len, const std::string& who) {
  auto* vr = dynamic_cast<VerbsRegion*>(&r);
  if (!vr) throw RunError(fmt::format("{}: verbs: buffer not registered by this transport", who));
  if (off + len > r.buffer().bytes)
    throw RunError(fmt::format("{}: verbs: range [{}, {}) outside its {} B buffer", who, off,
                               off + len, r.buffer().bytes));
  return *vr;
}
}  // namespace

Request VerbsTransport::post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) {
  Peer& p = peer_of(peer, "send");
  Op op;
  op.is_send = true;
  op.peer = p.index;
  op.region = &verbs_region(r, off, len, boot_.me());
  op.off = off;
  op.len = len;
  op.seq = p.send_seq++;
  std::uint64_t id = next_op_++;
  ops_.emplace(id, op);
  p.sends_unposted.push_back(id);
  pump(p);
  return Request{id, peer, true, len};
}

Request VerbsTransport::post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) {
  Peer& p = peer_of(peer, "receive");
  Op op;
  op.peer = p.index;
  op.region = &verbs_region(r, off, len, boot_.me());
  op.off = off;
  op.len = len;
  op.nchunks = chunk_count(len, p.chunk);
  op.seq = p.recv_seq++;
  std::uint64_t id = next_op_++;
  ops_.emplace(id, op);
  p.recv_unadvertised.push_back(id);
  pump(p);
  return Request{id, peer, false, len};
}

bool VerbsTransport::test(const Request& req) {
  int completions = progress();
  auto it = ops_.find(req.id);
  if (it == ops_.end())
    throw RunError(fmt::format("{}: verbs: test() of an unknown or finished request {}",
                               boot_.me(), req.id));
  if (it->second.done) {
    ops_.erase(it);
    return true;
  }
  const Peer& p = *peers_[it->second.peer];
  if (!p.error.empty()) {
    ops_.erase(it);
    throw RunError(p.error);
  }
  // A software device (rxe, siw) moves the data in kernel threads and
  // softirqs; spinning here would starve them of the CPU.
  if (software_device_ && completions == 0) sched_yield();
  return false;
}

int VerbsTransport::progress() {
  int n = poll_cq();
  for (auto& p : peers_) pump(*p);
  return n;
}

// Posts what flow control allows: credit updates, clear-to-sends, data.
void VerbsTransport::pump(Peer& p) {
  if (!p.error.empty()) return;
  auto* box = static_cast<std::uint64_t*>(mailbox_->ptr) + p.rank;
  p.credits.on_returned(std::atomic_ref<std::uint64_t>(*box).load(std::memory_order_acquire));
  if (p.reposts.should_announce() && !p.sq_full() && !post_credit(p)) return;

  while (!p.recv_unadvertised.empty() && p.credits.can_send() && !p.sq_full()) {
    Op& op = ops_.at(p.recv_unadvertised.front());
    CtlMsg m{kCtsMagic, op.region->id(), op.off, op.len, op.seq, 0};
    if (!post_ctl(p, m)) return;
    p.recv_advertised.push_back(p.recv_unadvertised.front());
    p.recv_unadvertised.pop_front();
  }

  // Sends take clear-to-sends in order; chunks of one message all go before
  // the next message's, so the receiver can count them.
  for (std::uint64_t id : p.sends_unposted) {
    Op& op = ops_.at(id);
    if (op.matched) continue;
    if (p.cts.empty()) break;
    CtlMsg m = p.cts.front();
    p.cts.pop_front();
    const auto& regions = remote_[p.rank];
    auto reg = regions.find(m.region);
    if (m.length != op.len || m.seq != op.seq || reg == regions.end() ||
        m.offset + m.length > reg->second.bytes) {
      fail(p, fmt::format("{}: verbs: send #{} of {} B to {} does not match its receive #{} "
                          "({} B at offset {} of buffer {}): both sides must post the same "
                          "lengths in the same order",
                          boot_.me(), op.seq, op.len, boot_.who(p.rank), m.seq, m.length,
                          m.offset, m.region));
      return;
    }
    op.matched = true;
    op.raddr = reg->second.addr + m.offset;
    op.rkey = reg->second.rkey;
    op.nchunks = chunk_count(op.len, p.chunk);
  }
  while (!p.sends_unposted.empty()) {
    std::uint64_t id = p.sends_unposted.front();
    Op& op = ops_.at(id);
    if (!op.matched) break;
    while (op.posted < op.nchunks && p.credits.can_send() && !p.sq_full())
      if (!post_chunk(p, id, op)) return;
    if (op.posted < op.nchunks) break;
    p.sends_unposted.pop_front();
  }
}

// ---- posting ----

namespace {
const char* wr_name(Wr k) {
  switch (k) {
    case Wr::recv: return "receive";
    case Wr::ctl: return "SEND (clear-to-send)";
    case Wr::data: return "RDMA WRITE WITH IMM";
    case Wr::credit: return "RDMA WRITE (credits)";
  }
  return "?";
}
}  // namespace

void VerbsTransport::post_recv_slot(Peer& p, std::uint32_t slot) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(p.recv_slot(slot)), kSlotBytes, p.slots->mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id(Wr::recv, p.index, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int e = ibv_post_recv(p.qp, &wr, &bad))
    fail(p, fmt::format("{}: verbs: ibv_post_recv (from {}): {}", boot_.me(), boot_.who(p.rank),
                        std::strerror(e)));
}

bool VerbsTransport::post_ctl(Peer& p, const CtlMsg& m) {
  std::uint32_t slot = recv_depth_ + static_cast<std::uint32_t>(p.sq_posted % send_depth_);
  std::memcpy(p.recv_slot(slot), &m, sizeof m);
  ibv_sge sge{reinterpret_cast<std::uint64_t>(p.recv_slot(slot)), sizeof m, p.slots->mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id(Wr::ctl, p.index, 0);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(p.qp, &wr, &bad)) {
    fail(p, fmt::format("{}: verbs: ibv_post_send(SEND to {}): {}", boot_.me(), boot_.who(p.rank),
                        std::strerror(e)));
    return false;
  }
  p.credits.on_send();
  p.sq.emplace_back(Wr::ctl, 0);
  ++p.sq_posted;
  return true;
}

bool VerbsTransport::post_chunk(Peer& p, std::uint64_t id, Op& op) {
  std::size_t i = op.posted;
  std::size_t start = i * p.chunk, n = chunk_length(op.len, p.chunk, i);
  ibv_sge sge{reinterpret_cast<std::uint64_t>(op.region->at(op.off + start)),
              static_cast<std::uint32_t>(n), op.region->mr()->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id(Wr::data, p.index, 0);
  wr.sg_list = n ? &sge : nullptr;
  wr.num_sge = n ? 1 : 0;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(op.seq);
  wr.wr.rdma.remote_addr = op.raddr + start;
  wr.wr.rdma.rkey = op.rkey;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(p.qp, &wr, &bad)) {
    fail(p, fmt::format("{}: verbs: ibv_post_send(RDMA WRITE WITH IMM, {} B to {}): {}",
                        boot_.me(), n, boot_.who(p.rank), std::strerror(e)));
    return false;
  }
  p.credits.on_send();
  p.sq.emplace_back(Wr::data, id);
  ++p.sq_posted;
  ++op.posted;
  return true;
}

bool VerbsTransport::post_credit(Peer& p) {
  std::uint32_t slot = recv_depth_ + static_cast<std::uint32_t>(p.sq_posted % send_depth_);
  std::uint64_t count = p.reposts.announce();
  std::memcpy(p.recv_slot(slot), &count, sizeof count);
  ibv_sge sge{reinterpret_cast<std::uint64_t>(p.recv_slot(slot)), sizeof count,
              p.slots->mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id(Wr::credit, p.index, 0);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = p.remote_mailbox;
  wr.wr.rdma.rkey = p.remote_mailbox_rkey;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(p.qp, &wr, &bad)) {
    fail(p, fmt::format("{}: verbs: ibv_post_send(RDMA WRITE of credits to {}): {}", boot_.me(),
                        boot_.who(p.rank), std::strerror(e)));
    return false;
  }
  p.sq.emplace_back(Wr::credit, 0);
  ++p.sq_posted;
  return true;
}

// ---- completions ----

int VerbsTransport::poll_cq() {
  if (!cq_) return 0;
  ibv_wc wc[32];
  for (int total = 0;;) {
    int n = ibv_poll_cq(cq_, 32, wc);
    if (n < 0) {
      for (auto& p : peers_)
        fail(*p, fmt::format("{}: verbs: ibv_poll_cq on {}: failed ({})", boot_.me(),
                             port_.device, n));
      return total;
    }
    for (int i = 0; i < n; ++i) on_completion(wc[i]);
    total += n;
    if (n < 32) return total;
  }
}

void VerbsTransport::on_completion(const ibv_wc& wc) {
  std::size_t index = wr_peer(wc.wr_id);
  if (index >= peers_.size()) return;  // cannot happen: every wr_id is ours
  Peer& p = *peers_[index];
  Wr kind = wr_kind(wc.wr_id);
  if (kind != Wr::recv) {
    // Send-queue completions come in posting order, so the front is this one.
    if (!p.sq.empty()) {
      auto [k, id] = p.sq.front();
      p.sq.pop_front();
      if (wc.status == IBV_WC_SUCCESS && k == Wr::data) {
        Op& op = ops_.at(id);
        if (++op.completed == op.nchunks) op.done = true;
      }
    }
  }
  if (wc.status != IBV_WC_SUCCESS) {
    fail(p, wc_error(p, wc));
    return;
  }
  if (kind == Wr::recv) on_recv(p, wc, wr_slot(wc.wr_id));
}

void VerbsTransport::on_recv(Peer& p, const ibv_wc& wc, std::uint32_t slot) {
  if (wc.opcode == IBV_WC_RECV) {
    CtlMsg m;
    std::memcpy(&m, p.recv_slot(slot), sizeof m);
    if (m.magic != kCtsMagic || wc.byte_len != sizeof m) {
      fail(p, fmt::format("{}: verbs: garbled control message ({} B) from {}", boot_.me(),
                          wc.byte_len, boot_.who(p.rank)));
      return;
    }
    p.cts.push_back(m);
  } else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    std::uint32_t seq = ntohl(wc.imm_data);
    if (p.recv_advertised.empty() || ops_.at(p.recv_advertised.front()).seq != seq) {
      fail(p, fmt::format("{}: verbs: data for message #{} from {} that no receive expects",
                          boot_.me(), seq, boot_.who(p.rank)));
      return;
    }
    Op& op = ops_.at(p.recv_advertised.front());
    if (++op.completed == op.nchunks) {
      op.done = true;
      p.recv_advertised.pop_front();
    }
  }
  post_recv_slot(p, slot);
  p.reposts.on_repost();
}

namespace {
const char* wc_hint(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
      return "the peer stopped answering: it died, its queue pair is gone, or the link, GID or "
             "MTU between the two ports is wrong";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "the peer had no receive posted for too long";
    case IBV_WC_REM_ACCESS_ERR: return "the peer refused the memory key or range";
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR: return "the local buffer is not (or no longer) registered";
    case IBV_WC_WR_FLUSH_ERR: return "the queue pair was already in error";
    default: return "see the HCA's error counters";
  }
}
}  // namespace

std::string VerbsTransport::wc_error(const Peer& p, const ibv_wc& wc) const {
  Wr kind = wr_kind(wc.wr_id);
  return fmt::format("{}: verbs: {} {} {} failed on {} port {}: {} (wc status {}, vendor_err "
                     "0x{:x}); {}",
                     boot_.me(), wr_name(kind), kind == Wr::recv ? "from" : "to",
                     boot_.who(p.rank), port_.device, port_.port, ibv_wc_status_str(wc.status),
                     static_cast<int>(wc.status), wc.vendor_err, wc_hint(wc.status));
}

// The first error of a peer is the one reported; flushes that follow it are noise.
void VerbsTransport::fail(Peer& p, const std::string& why) {
  if (p.error.empty()) p.error = why;
}

std::vector<std::pair<std::string, std::string>> VerbsTransport::describe() const {
  std::vector<std::pair<std::string, std::string>> d = {
      {"verbs.device", port_.device},
      {"verbs.port", std::to_string(port_.port)},
      {"verbs.link_layer", link_layer_name(port_.ethernet)},
      {"verbs.active_mtu", std::to_string(mtu_bytes(port_.active_mtu))},
      {"verbs.gid_index", std::to_string(port_.gid_index)},
      {"verbs.registration", registration_},
      {"verbs.device_choice", port_.why},
      {"verbs.qp_timeout", std::to_string(qp_timeout_)},
      {"verbs.retry_cnt", std::to_string(retry_cnt_)},
      {"verbs.software_device", software_device_ ? "yes (yields the CPU while idle)" : "no"},
  };
  if (port_.ethernet) d.emplace_back("verbs.gid", gid_text(port_.gid));
  else d.emplace_back("verbs.lid", std::to_string(port_.lid));
  if (!peers_.empty()) {
    int mtu = peers_.front()->path_mtu;
    for (const auto& p : peers_) mtu = std::min(mtu, p->path_mtu);
    d.emplace_back("verbs.path_mtu", std::to_string(mtu_bytes(mtu)));
    d.emplace_back("verbs.max_chunk", std::to_string(peers_.front()->chunk));
  }
  if (!port_.gpu_hca_path.empty()) d.emplace_back("verbs.gpu_hca_path", port_.gpu_hca_path);
  return d;
}

// RDMA WRITE WITH IMM between registered regions, on the port this transport
// opened; device memory registered as `registration_` says (dma-buf or
// peermem: the HCA reads and writes GPU memory itself, never via host).
PathTaken VerbsTransport::path_taken(MemKind mem, std::size_t, int) const {
  PathTaken p;
  std::string dev = fmt::format("{}:{}", port_.device, port_.port);
  p.how = fmt::format("verbs RC RDMA WRITE WITH IMM on {} ({}{}), {} MR", dev, link_layer_name(port_.ethernet),
                      port_.ethernet ? fmt::format(" gid {}", port_.gid_index) : "",
                      mem == MemKind::cuda ? registration_ : std::string("host"));
  p.links = {"hca:" + dev};
  if (mem == MemKind::cuda) p.links.push_back("gpu");
  return p;
}

}  // namespace gdr::verbs

namespace {
GDR_REGISTER_TRANSPORT(verbs_registrar, "verbs",
                       "rdma-core RC queue pairs, RDMA WRITE WITH IMM; GPUDirect RDMA for cuda "
                       "memory (dma-buf, else nvidia_peermem)",
                       [] { return gdr::verbs::verbs_unavailable_reason(); },
                       [](gdr::Bootstrap& b) -> std::unique_ptr<gdr::Transport> {
                         return std::make_unique<gdr::verbs::VerbsTransport>(b);
                       });
}  // namespace
