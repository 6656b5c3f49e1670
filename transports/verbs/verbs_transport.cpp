#include "verbs_transport.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <sched.h>

#include <fmt/format.h>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/core/timer.h"
#include "src/memory/gpu_settings.h"
#include "verbs_internal.h"

namespace gdr::verbs {

// ---- operations ----

VerbsTransport::Peer& VerbsTransport::peer_of(int rank, const char* what) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= peer_index_.size() || peer_index_[rank] < 0)
    throw RunError(fmt::format("{}: verbs: {} with {}, which connect() was not given", boot_.me(),
                               what, boot_.who(rank)));
  Peer& p = *peers_[peer_index_[rank]];
  if (!p.error.empty()) raise(p);
  return p;
}

namespace {
// Who we are is formatted only for an error: a post is on the timed path.
VerbsRegion& verbs_region(MemRegion& r, std::size_t off, std::size_t len, const Bootstrap& boot) {
  auto* vr = dynamic_cast<VerbsRegion*>(&r);
  if (!vr)
    throw RunError(fmt::format("{}: verbs: buffer not registered by this transport", boot.me()));
  if (off + len > r.buffer().bytes)
    throw RunError(fmt::format("{}: verbs: range [{}, {}) outside its {} B buffer", boot.me(), off,
                               off + len, r.buffer().bytes));
  return *vr;
}
}  // namespace

Request VerbsTransport::post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) {
  Peer& p = peer_of(peer, "send");
  Op op;
  op.is_send = true;
  op.peer = p.index;
  op.region = &verbs_region(r, off, len, boot_);
  op.off = off;
  op.len = len;
  op.seq = p.send_seq++;
  std::uint64_t id = next_op_++;
  ops_.insert(id, op);
  // Posted by the next test(): a window's sends then go out together.
  p.sends_unposted.push_back(id);
  return Request{id, peer, true, len};
}

Request VerbsTransport::post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) {
  Peer& p = peer_of(peer, "receive");
  Op op;
  op.peer = p.index;
  op.region = &verbs_region(r, off, len, boot_);
  op.off = off;
  op.len = len;
  op.nchunks = chunk_count(len, p.chunk);
  op.seq = p.recv_seq++;
  std::uint64_t id = next_op_++;
  ops_.insert(id, op);
  // Advertised by the next test() or start_posted(): the clear-to-sends of
  // receives posted together then share control SENDs (kCtsPerSend).
  p.recv_unadvertised.push_back(id);
  return Request{id, peer, false, len};
}

bool VerbsTransport::test(const Request& req) {
  Op* op = ops_.find(req.id);
  if (!op)
    throw RunError(fmt::format("{}: verbs: test() of an unknown or finished request {}",
                               boot_.me(), req.id));
  // poll mode: the last byte first, as ib_write_lat; nothing else is on the path.
  if (!op->is_send && op->poll && !op->done && arrived(*op, req.id)) {
    ops_.erase(req.id);
    idle_polls_ = 0;
    return true;
  }
  int completions = progress();  // inserts nothing: `op` stays valid
  // A spin (the yield's, the event wait's) ends with any completion, ours
  // or not, and with the wait for this request.
  if (completions > 0 || op->done) idle_polls_ = 0;
  if (op->done) {
    ops_.erase(req.id);
    return true;
  }
  const Peer& p = *peers_[op->peer];
  if (!p.error.empty()) {
    ops_.erase(req.id);
    raise(p);
  }
  // A software device (rxe, siw) moves the data in kernel threads and
  // softirqs; spinning here would starve them of the CPU. With a completion
  // channel, sleep once a short spin found nothing; not for a poll-mode
  // receive, whose arrival makes no completion. Without one, yield once a
  // spin of kSpinBeforeYieldS found nothing.
  if (completions > 0) {
  } else if (wait_event_ && !(op->poll && !op->is_send)) {
    if (++idle_polls_ >= kSpinPolls) {
      idle_polls_ = 0;
      sleep_on_cq();
    }
  } else if (software_device_ && yield_) {
    // The spin's start, read at its first empty poll (a cheap clock: the TSC where
    // clock_gettime is a syscall, src/core/timer.h); then every 16th looks at it.
    if (idle_polls_ == 0) spin_start_ = timer_now();
    if (idle_polls_ < 0 || ((++idle_polls_ & 15) == 0 && timer_now() - spin_start_ > kSpinBeforeYieldS)) {
      idle_polls_ = -1;  // past the spin: every further empty poll yields
      sched_yield();
    }
  }
  return false;
}

// poll mode: whether the sender's last byte replaced the sentinel. The
// receive then leaves the advertised list (a later one may reuse its bytes).
bool VerbsTransport::arrived(Op& op, std::uint64_t id) {
  auto* last = reinterpret_cast<std::uint8_t*>(op.region->at(op.off + op.len - 1));
  if (std::atomic_ref<std::uint8_t>(*last).load(std::memory_order_acquire) == op.sentinel)
    return false;
  op.done = true;
  auto& adv = peers_[op.peer]->recv_advertised;
  if (auto at = std::find(adv.begin(), adv.end(), id); at != adv.end()) adv.erase(at);
  return true;
}

int VerbsTransport::progress() {
  int n = poll_cq();
  for (auto& p : peers_) {
    pump(*p);
    flush(*p);
  }
  return n;
}

// While this rank waits in a collective: a send it counted done at posting
// (eager) may still fail, for example when the peer's guest stalled past the
// retry count. Reporting that here names the real cause at once; otherwise the
// peer waits for the message until its deadline and knows only that this rank
// sat in a barrier (seen on Soft-RoCE under load). Credits and reposts go on
// too. Only an error no caller has seen yet is thrown: the failure path (or a
// test that provoked one) waits in collectives again.
void VerbsTransport::progress_while_idle() {
  if (!cq_ || error_reported_) return;
  progress();
  for (auto& p : peers_)
    if (!p->error.empty()) raise(*p);
}

void VerbsTransport::raise(const Peer& p) {
  error_reported_ = true;
  throw RunError(p.error);
}

// A receive is advertised with a clear-to-send (`m`, sent by pump()). In poll mode a host range
// gets a sentinel in its last byte first, and waits while an earlier receive
// still outstanding covers any of its bytes (that one's data would look like
// this one's arrival). False: not advertised yet.
bool VerbsTransport::advertise(Peer& p, Op& op, std::uint64_t id, CtlMsg& m) {
  m = CtlMsg{kCtsMagic, op.region->id(), op.off, op.len, op.seq, 0};
  if (mode_ == Mode::poll && op.len > 0 && op.region->buffer().kind == MemKind::host) {
    const std::byte* lo = op.region->at(op.off);
    const std::byte* hi = lo + op.len;
    for (std::uint64_t other : p.recv_advertised) {
      const Op& o = ops_.at(other);
      const std::byte* olo = o.region->at(o.off);
      if (olo < hi && lo < olo + o.len) return false;
    }
    auto* last = reinterpret_cast<std::uint8_t*>(op.region->at(op.off + op.len - 1));
    std::atomic_ref<std::uint8_t> byte(*last);
    op.sentinel = sentinel_for(byte.load(std::memory_order_relaxed));
    byte.store(op.sentinel, std::memory_order_release);
    op.poll = true;
    m.flags = kCtsPoll | (std::uint32_t(op.sentinel) << 8);
  }
  p.recv_advertised.push_back(id);
  return true;
}

// Builds what flow control allows: credit updates, clear-to-sends, data.
// flush() posts it.
void VerbsTransport::pump(Peer& p) {
  if (!p.error.empty()) return;
  auto* box = static_cast<std::uint64_t*>(mailbox_->ptr) + p.rank;
  p.credits.on_returned(std::atomic_ref<std::uint64_t>(*box).load(std::memory_order_acquire));
  if (p.reposts.should_announce() && !p.sq_full()) post_credit(p);

  // The receives posted so far, kCtsPerSend clear-to-sends to a SEND.
  while (!p.recv_unadvertised.empty() && p.credits.can_send() && !p.sq_full()) {
    CtlMsg m[kCtsPerSend];
    std::size_t n = 0;
    for (; n < kCtsPerSend && !p.recv_unadvertised.empty(); ++n) {
      std::uint64_t id = p.recv_unadvertised.front();
      if (!advertise(p, ops_.at(id), id, m[n])) break;
      p.recv_unadvertised.pop_front();
    }
    if (n > 0) post_ctl(p, m, n);
    if (n < kCtsPerSend) break;  // all advertised, or one waits for an earlier arrival
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
    op.poll = m.flags & kCtsPoll;
    op.sentinel = static_cast<std::uint8_t>(m.flags >> 8);
  }
  while (!p.sends_unposted.empty() && p.error.empty()) {
    std::uint64_t id = p.sends_unposted.front();
    Op& op = ops_.at(id);
    if (!op.matched) break;
    // write mode: the burst ends where no matched send follows.
    bool last_of_burst = p.sends_unposted.size() == 1 || !ops_.at(p.sends_unposted[1]).matched;
    while (op.posted < op.nchunks && p.credits.can_send() && !p.sq_full() && p.error.empty())
      post_chunk(p, id, op, last_of_burst);
    if (op.posted < op.nchunks) break;
    p.sends_unposted.pop_front();
  }
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
      {"verbs.mode", mode_name(mode_)},
      {"verbs.mode_on_cuda", mode(MemKind::cuda)},
      {"verbs.max_inline", std::to_string(max_inline_)},
      {"verbs.postlist", postlist_ ? "1" : "0"},
      {"verbs.signal_every", std::to_string(signal_every_)},
      {"verbs.recv_batch", recv_batch_ ? "1" : "0"},
      {"verbs.eager", eager_ && max_inline_ > 0 ? "1" : "0"},
      {"verbs.wait", wait_event_ ? "event" : "poll"},
      {"verbs.yield", yield_ && software_device_ ? "1" : "0"},
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

// RDMA WRITEs between registered regions, as the mode moves them, on the
// port this transport opened; device memory registered as `registration_`
// says (dma-buf or peermem: the HCA reads and writes GPU memory itself).
PathTaken VerbsTransport::path_taken(MemKind mem, std::size_t, int) const {
  PathTaken p;
  std::string dev = fmt::format("{}:{}", port_.device, port_.port);
  const std::string m = mode(mem);
  const char* how = m == "imm"     ? "RDMA WRITE WITH IMM"
                    : m == "write" ? "RDMA WRITE (an immediate per burst)"
                                   : "RDMA WRITE (the receiver polls the last byte)";
  p.how = fmt::format("verbs RC {} on {} ({}{}), {} MR", how, dev, link_layer_name(port_.ethernet),
                      port_.ethernet ? fmt::format(" gid {}", port_.gid_index) : "",
                      mem == MemKind::cuda ? registration_ : std::string("host"));
  p.links = {"hca:" + dev};
  if (mem == MemKind::cuda) p.links.push_back("gpu");
  return p;
}

}  // namespace gdr::verbs

namespace {
GDR_REGISTER_TRANSPORT(verbs_registrar, "verbs",
                       "rdma-core RC queue pairs, RDMA WRITE (--verbs-mode imm|write|poll); "
                       "GPUDirect RDMA for cuda "
                       "memory (dma-buf, else nvidia_peermem)",
                       [] { return gdr::verbs::verbs_unavailable_reason(); },
                       [](gdr::Bootstrap& b, const gdr::Settings& s) -> std::unique_ptr<gdr::Transport> {
                         gdr::VerbsOptions o = s.get<gdr::VerbsOptions>();
                         o.cuda_device = s.get<gdr::GpuSettings>().device;
                         return std::make_unique<gdr::verbs::VerbsTransport>(b, o);
                       },
                       {},  // device memory: known once a run tries (dma-buf or nvidia_peermem)
                       [](const gdr::Settings& s) { return s.get<gdr::VerbsOptions>().hca; });
}  // namespace
