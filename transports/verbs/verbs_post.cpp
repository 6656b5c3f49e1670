// Posting work requests and reaping completions for the verbs transport.
// pump() (verbs_transport.cpp) appends send WRs to the peer's batch; flush()
// posts them, as one linked list (one doorbell) unless postlist is off.
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "verbs_internal.h"
#include "verbs_transport.h"

namespace gdr::verbs {

// ---- receives ----

// Posts receive slots: with recv batching the consumed ones as one list per
// CQ pass, so the queue stays full at one ibv_post_recv per batch. Reposts
// count as credits for the peer; the first posting (connect) does not.
// Lists of up to kRecvList WRs built on the stack: a repost is on the path
// of every message.
void VerbsTransport::post_recv_slots(Peer& p, const std::uint32_t* slots, std::size_t n,
                                     bool repost) {
  constexpr std::size_t kRecvList = 32;
  for (std::size_t first = 0; first < n && p.error.empty(); first += kRecvList) {
    const std::size_t k = std::min(kRecvList, n - first);
    ibv_sge sge[kRecvList];
    ibv_recv_wr wr[kRecvList];
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint32_t slot = slots[first + i];
      sge[i] = ibv_sge{reinterpret_cast<std::uint64_t>(p.recv_slot(slot)),
                       static_cast<std::uint32_t>(kSlotBytes), p.slots->mr->lkey};
      wr[i] = ibv_recv_wr{};
      wr[i].wr_id = wr_id(Wr::recv, p.index, slot);
      wr[i].sg_list = &sge[i];
      wr[i].num_sge = 1;
      wr[i].next = i + 1 < k ? &wr[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    if (int e = ibv_post_recv(p.qp, wr, &bad)) {
      fail(p, fmt::format("{}: verbs: ibv_post_recv ({} WRs, from {}): {}", boot_.me(), k,
                          boot_.who(p.rank), std::strerror(e)));
      return;
    }
    if (repost)
      for (std::size_t i = 0; i < k; ++i) p.reposts.on_repost();
  }
}

void VerbsTransport::flush_reposts(Peer& p) {
  post_recv_slots(p, p.repost.data(), p.repost.size(), true);
  p.repost.clear();
}

// ---- sends ----

// One send WR in the peer's batch, accounted for at once (the send queue,
// selective signaling); flush() posts it. Small host data goes inline.
ibv_send_wr& VerbsTransport::append(Peer& p, Wr kind, std::uint64_t op, void* addr,
                                    std::uint32_t len, std::uint32_t lkey, bool host) {
  if (p.batch.capacity() < send_depth_) {  // WRs point at SGEs: no reallocation later
    p.batch.reserve(send_depth_);
    p.batch_sge.reserve(send_depth_);
  }
  std::uint32_t index = static_cast<std::uint32_t>(p.sq_posted & 0xffffffu);
  p.batch_sge.push_back(ibv_sge{reinterpret_cast<std::uint64_t>(addr), len, lkey});
  ibv_send_wr& wr = p.batch.emplace_back();
  wr.wr_id = wr_id(kind, p.index, index);
  wr.sg_list = len ? &p.batch_sge.back() : nullptr;
  wr.num_sge = len ? 1 : 0;
  if (p.signals.signal(false)) wr.send_flags |= IBV_SEND_SIGNALED;
  if (host && len > 0 && len <= max_inline_) wr.send_flags |= IBV_SEND_INLINE;
  p.sq.push_back(SqEntry{kind, op, index});
  ++p.sq_posted;
  return wr;
}

// Posts the batch. Its last WR is signaled when someone may wait on it (a
// data WR not complete at posting); others wait for the signal policy's turn.
bool VerbsTransport::flush(Peer& p) {
  if (p.batch.empty()) return true;
  if (p.batch_waited && !(p.batch.back().send_flags & IBV_SEND_SIGNALED)) {
    p.batch.back().send_flags |= IBV_SEND_SIGNALED;
    p.signals.signal(true);
  }
  std::size_t n = p.batch.size();
  for (std::size_t i = 0; i + 1 < n; ++i) p.batch[i].next = postlist_ ? &p.batch[i + 1] : nullptr;
  bool ok = true;
  for (std::size_t i = 0; i < n && ok; i = postlist_ ? n : i + 1) {
    ibv_send_wr* bad = nullptr;
    if (int e = ibv_post_send(p.qp, &p.batch[i], &bad)) {
      Wr kind = wr_kind(bad ? bad->wr_id : p.batch[i].wr_id);
      fail(p, fmt::format("{}: verbs: ibv_post_send({}, {} WRs to {}): {}", boot_.me(),
                          wr_name(kind), postlist_ ? n : 1, boot_.who(p.rank), std::strerror(e)));
      ok = false;
    }
  }
  if (ok)
    for (std::uint64_t id : p.batch_eager)
      if (Op* op = ops_.find(id)) op->done = true;
  p.batch.clear();
  p.batch_sge.clear();
  p.batch_eager.clear();
  p.batch_waited = false;
  return ok;
}

void VerbsTransport::post_ctl(Peer& p, const CtlMsg* m, std::size_t n) {
  std::uint32_t slot = recv_depth_ + static_cast<std::uint32_t>(p.sq_posted % send_depth_);
  const auto bytes = static_cast<std::uint32_t>(n * sizeof *m);
  std::memcpy(p.recv_slot(slot), m, bytes);
  ibv_send_wr& wr = append(p, Wr::ctl, 0, p.recv_slot(slot), bytes, p.slots->mr->lkey, true);
  wr.opcode = IBV_WR_SEND;
  p.credits.on_send();
}

// One chunk of a send. imm: every chunk WRITE WITH IMM. write and poll:
// plain WRITEs; the last chunk carries the immediate when the receiver needs
// one: write, at the end of a burst; poll, when the receiver does not poll
// (device memory) or the data's last byte equals its sentinel.
void VerbsTransport::post_chunk(Peer& p, std::uint64_t id, Op& op, bool last_of_burst) {
  std::size_t i = op.posted;
  std::size_t start = i * p.chunk, n = chunk_length(op.len, p.chunk, i);
  const bool host = op.region->buffer().kind == MemKind::host;
  bool imm = true;
  if (mode_ != Mode::imm) {
    bool last_chunk = i + 1 == op.nchunks;
    if (mode_ == Mode::write) imm = last_chunk && last_of_burst;
    else
      imm = last_chunk &&
            (!op.poll || !host ||
             *reinterpret_cast<const std::uint8_t*>(op.region->at(op.off + op.len - 1)) ==
                 op.sentinel);
  }
  ibv_send_wr& wr = append(p, Wr::data, id, op.region->at(op.off + start),
                           static_cast<std::uint32_t>(n), op.region->mr()->lkey, host);
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.imm_data = htonl(op.seq);
  wr.wr.rdma.remote_addr = op.raddr + start;
  wr.wr.rdma.rkey = op.rkey;
  if (imm) {
    p.credits.on_send();  // only an immediate consumes a receive WQE
    ++p.imms_sent;
    p.last_imm_sent = op.seq;
  }
  ++op.posted;
  if (eager_ && op.nchunks == 1 && (wr.send_flags & IBV_SEND_INLINE)) p.batch_eager.push_back(id);
  else p.batch_waited = true;
}

void VerbsTransport::post_credit(Peer& p) {
  std::uint32_t slot = recv_depth_ + static_cast<std::uint32_t>(p.sq_posted % send_depth_);
  std::uint64_t count = p.reposts.announce();
  std::memcpy(p.recv_slot(slot), &count, sizeof count);
  ibv_send_wr& wr =
      append(p, Wr::credit, 0, p.recv_slot(slot), sizeof count, p.slots->mr->lkey, true);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = p.remote_mailbox;
  wr.wr.rdma.rkey = p.remote_mailbox_rkey;
}

// ---- completions ----

int VerbsTransport::poll_cq() {
  if (!cq_) return 0;
  ibv_wc wc[32];
  int total = 0;
  for (;;) {
    int n = ibv_poll_cq(cq_, 32, wc);
    if (n < 0) {
      for (auto& p : peers_)
        fail(*p, fmt::format("{}: verbs: ibv_poll_cq on {}: failed ({})", boot_.me(),
                             port_.device, n));
      break;
    }
    for (int i = 0; i < n; ++i) on_completion(wc[i]);
    total += n;
    if (n < 32) break;
  }
  for (auto& p : peers_) flush_reposts(*p);
  return total;
}

// Arms the CQ, then sleeps until it signals or kSleepMs pass. A completion
// that came between the caller's last poll and the arming raises no event:
// the poll after arming handles it instead of sleeping.
void VerbsTransport::sleep_on_cq() {
  if (ibv_req_notify_cq(cq_, 0)) return;  // cannot arm: keep spinning
  if (poll_cq() > 0) return;
  pollfd pfd{channel_->fd, POLLIN, 0};
  if (::poll(&pfd, 1, kSleepMs) <= 0) return;
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ++cq_events_;
}

void VerbsTransport::on_completion(const ibv_wc& wc) {
  std::size_t index = wr_peer(wc.wr_id);
  if (index >= peers_.size()) return;  // cannot happen: every wr_id is ours
  Peer& p = *peers_[index];
  Wr kind = wr_kind(wc.wr_id);
  if (kind != Wr::recv) {
    // Send completions come in posting order; a signaled one also completes
    // the unsignaled WRs posted before it.
    const std::uint32_t upto = wr_slot(wc.wr_id);
    while (!p.sq.empty()) {
      SqEntry e = p.sq.front();
      p.sq.pop_front();
      if (wc.status == IBV_WC_SUCCESS && e.kind == Wr::data)
        if (Op* op = ops_.find(e.op); op && ++op->completed == op->nchunks) op->done = true;
      if (e.index == upto) break;
    }
  }
  if (wc.status != IBV_WC_SUCCESS) {
    fail(p, wc_error(p, wc));
    return;
  }
  if (kind == Wr::recv) on_recv(p, wc, wr_slot(wc.wr_id));
}

void VerbsTransport::on_recv(Peer& p, const ibv_wc& wc, std::uint32_t slot) {
  if (wc.opcode == IBV_WC_RECV) {  // clear-to-sends, 1 to kCtsPerSend
    const std::size_t n = wc.byte_len / sizeof(CtlMsg);
    bool ok = n >= 1 && n <= kCtsPerSend && wc.byte_len == n * sizeof(CtlMsg);
    for (std::size_t i = 0; ok && i < n; ++i) {
      CtlMsg m;
      std::memcpy(&m, p.recv_slot(slot) + i * sizeof m, sizeof m);
      ok = m.magic == kCtsMagic;
      if (ok) p.cts.push_back(m);
    }
    if (!ok) {
      fail(p, fmt::format("{}: verbs: garbled control message ({} B) from {}", boot_.me(),
                          wc.byte_len, boot_.who(p.rank)));
      return;
    }
  } else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    const std::uint32_t seq = ntohl(wc.imm_data);
    ++p.imms_received;
    p.last_imm_received = seq;
    if (mode_ == Mode::imm) {  // one immediate per chunk, in order
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
    } else {
      // write, poll: message `seq` and every earlier one have landed (RC
      // places WRITEs in order); poll-mode receives may have left already.
      bool found = false;
      while (!found && !p.recv_advertised.empty()) {
        Op& op = ops_.at(p.recv_advertised.front());
        if (static_cast<std::int32_t>(op.seq - seq) > 0) break;
        found = op.seq == seq;
        op.done = true;
        p.recv_advertised.pop_front();
      }
      if (!found) {
        fail(p, fmt::format("{}: verbs: data for message #{} from {} that no receive expects",
                            boot_.me(), seq, boot_.who(p.rank)));
        return;
      }
    }
  }
  if (recv_batch_) p.repost.push_back(slot);
  else post_recv_slots(p, &slot, 1, true);
}

std::string VerbsTransport::stall_detail(int rank) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= peer_index_.size() || peer_index_[rank] < 0)
    return {};
  const Peer& p = *peers_[peer_index_[rank]];
  auto oldest = [&](const std::deque<std::uint64_t>& q) {
    return q.empty() ? std::string("none") : fmt::format("#{}", ops_.at(q.front()).seq);
  };
  return fmt::format(
      "verbs with {} ({} mode): sends not posted {} (oldest {}), clear-to-sends held {}; receives "
      "not advertised {}, advertised {} (oldest {}); immediates sent {} (last #{}), received {} "
      "(last #{}); send credits {} of {}; send WRs in flight {}",
      boot_.who(rank), mode_name(mode_), p.sends_unposted.size(), oldest(p.sends_unposted), p.cts.size(),
      p.recv_unadvertised.size(), p.recv_advertised.size(), oldest(p.recv_advertised), p.imms_sent,
      p.last_imm_sent, p.imms_received, p.last_imm_received, p.credits.available(),
      p.credits.window(), p.sq.size());
}

std::string VerbsTransport::mode(MemKind k) const {
  // Device memory has no CPU mapping here (no GDRCopy): poll falls back to imm.
  if (mode_ == Mode::poll && k != MemKind::host) return "imm";
  return mode_name(mode_);
}

}  // namespace gdr::verbs
