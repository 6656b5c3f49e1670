// Set-up of the verbs transport: the device, the completion queue, one RC
// queue pair per peer, the endpoint exchange and INIT -> RTR -> RTS.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "verbs_internal.h"
#include "verbs_options.h"
#include "verbs_transport.h"

namespace gdr::verbs {

// ---- set-up ----

VerbsTransport::VerbsTransport(Bootstrap& boot, const VerbsOptions& o) : boot_(boot) {
  dev_ = open_device(o, boot.local_rank(), boot.me(), port_);
  ibv_device_attr da{};
  if (ibv_query_device(dev_->ctx, &da))
    throw RunError(fmt::format("{}: verbs: ibv_query_device({}): {}", boot.me(), port_.device,
                               std::strerror(errno)));
  send_depth_ = std::min<std::uint32_t>(kSendDepth, da.max_qp_wr);
  recv_depth_ = std::min<std::uint32_t>(kRecvDepth, da.max_qp_wr);
  cq_max_ = da.max_cqe;
  software_device_ = da.vendor_id == kRxeVendorId || da.vendor_id == kSiwVendorId;
  // rxe takes retry_cnt 7 to mean "retry forever" (the spec reserves that for
  // rnr_retry), so a dead peer would never be reported there: use 6.
  retry_cnt_ = o.retry_cnt.value_or(da.vendor_id == kRxeVendorId ? 6 : 7);
  // Ack timeout, 4.096 us * 2^qp_timeout_ a try: 67 ms (14, perftest's) on
  // an HCA. A software device acks from kernel threads on CPUs it shares
  // with everything else: under load rxe under emulation went 7 tries of
  // 67 ms without an ack and failed a healthy peer, where
  // perftest, with retry_cnt 7 (forever on rxe), just waits. 16 (268 ms a
  // try, ~2 s before a dead peer is reported) survives a 1.5 s stall and
  // still reports a dead peer before mpirun's 5 s keepalive in the
  // two-guest tests (17, ~4 s, lost that race once: tests/softroce).
  qp_timeout_ = o.qp_timeout.value_or(software_device_ ? kSoftQpTimeout : 14);
  mode_ = parse_mode(o.mode);
  // The fast paths, on by default; 0 turns one off to measure what it gives.
  want_inline_ = o.inline_sends ? kWantInline : 0;
  postlist_ = o.postlist;
  recv_batch_ = o.recv_batch;
  eager_ = o.eager;
  // A software device gets the CPU back on an empty poll (sched_yield),
  // except in poll mode, whose arrivals are memory writes the kernel made
  // already: yielding only notices them later (measured at 8 B: 62-82 us
  // without, 78-101 us with; ib_write_lat 55-60 us, which never yields).
  yield_ = o.yield.value_or(mode_ == Mode::poll ? 0 : 1);
  // Waiting: spin on the CQ (poll), or after kSpinPolls empty polls sleep
  // on a completion channel (event, as perftest -e). Default: poll, except
  // write mode on a software device, whose receiver is passive (one
  // completion per window, as ib_write_bw's, which does not poll at all):
  // spinning there took the CPU from the kernel moving the data (measured:
  // write bw 0.35-0.7 of ib_write_bw spinning, 0.9-1.2 sleeping).
  wait_event_ = o.wait.empty() ? software_device_ && mode_ == Mode::write : o.wait == "event";
  // Declared up to 128, half of kSendDepth; a device with a shorter queue is rarer.
  if (static_cast<std::uint32_t>(o.signal_every) > send_depth_ / 2)
    throw UsageError(fmt::format("{}: GDR_VERBS_SIGNAL_EVERY={}: {} takes at most {} (half its send queue)",
                                 boot.me(), o.signal_every, port_.device, send_depth_ / 2));
  signal_every_ = static_cast<std::uint32_t>(o.signal_every);
  mailbox_ = std::make_unique<HostMr>(dev_->pd, sizeof(std::uint64_t) * boot.size(), kAccess,
                                      boot.me());
  remote_.resize(boot.size());
  boot_.add_idle_progress(this, [this] { progress_while_idle(); });
}

VerbsTransport::~VerbsTransport() {
  boot_.remove_idle_progress(this);
  for (auto& p : peers_) {
    if (p->qp) ibv_destroy_qp(p->qp);
    p->slots.reset();
  }
  if (cq_) {
    if (cq_events_) ibv_ack_cq_events(cq_, cq_events_);
    ibv_destroy_cq(cq_);
  }
  if (channel_) ibv_destroy_comp_channel(channel_);
}

// One CQ for every queue pair, big enough for all their send and receive WQEs.
void VerbsTransport::ensure_cq(std::size_t npeers) {
  std::size_t need = std::size_t(send_depth_ + recv_depth_) * std::max<std::size_t>(npeers, 1);
  int want = static_cast<int>(std::min<std::size_t>(need, std::size_t(cq_max_)));
  if (cq_ && cq_size_ >= want) return;
  if (cq_) {
    if (ibv_resize_cq(cq_, want))
      throw RunError(fmt::format("{}: verbs: ibv_resize_cq({} -> {}): {}", boot_.me(), cq_size_,
                                 want, std::strerror(errno)));
  } else {
    if (wait_event_ && !(channel_ = ibv_create_comp_channel(dev_->ctx)))
      throw RunError(fmt::format("{}: verbs: ibv_create_comp_channel on {}: {}", boot_.me(),
                                 port_.device, std::strerror(errno)));
    cq_ = ibv_create_cq(dev_->ctx, want, nullptr, channel_, 0);
    if (!cq_)
      throw RunError(fmt::format("{}: verbs: ibv_create_cq({}) on {}: {}", boot_.me(), want,
                                 port_.device, std::strerror(errno)));
  }
  cq_size_ = want;
}

std::unique_ptr<VerbsTransport::Peer> VerbsTransport::create_peer(int rank) {
  auto p = std::make_unique<Peer>();
  p->rank = rank;
  p->send_depth = send_depth_;
  p->slots = std::make_unique<HostMr>(dev_->pd, kSlotBytes * (recv_depth_ + send_depth_),
                                      IBV_ACCESS_LOCAL_WRITE, boot_.me());
  p->credits = CreditWindow(recv_depth_);
  p->reposts = RepostCounter(std::min(kAnnounceBatch, recv_depth_ / 4));
  p->signals = SignalPolicy(signal_every_);
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq_;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = send_depth_;
  a.cap.max_recv_wr = recv_depth_;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = want_inline_;
  p->qp = ibv_create_qp(dev_->pd, &a);
  if (!p->qp && want_inline_) {  // a device without inline sends: go without
    a.cap.max_inline_data = 0;
    p->qp = ibv_create_qp(dev_->pd, &a);
  }
  // What the device granted (it may round up); every QP asks the same.
  if (p->qp) max_inline_ = a.cap.max_inline_data;
  if (!p->qp)
    throw RunError(fmt::format("{}: verbs: ibv_create_qp(RC, for {}) on {}: {}", boot_.me(),
                               boot_.who(rank), port_.device, std::strerror(errno)));
  return p;
}

void VerbsTransport::to_init(Peer& p) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<std::uint8_t>(port_.port);
  a.qp_access_flags = kAccess;
  if (int e = ibv_modify_qp(p.qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    throw RunError(fmt::format("{}: verbs: ibv_modify_qp(INIT, for {}): {}", boot_.me(),
                               boot_.who(p.rank), std::strerror(e)));
  // Receives may be posted in INIT, so the peer's first message finds one.
  std::vector<std::uint32_t> all(recv_depth_);
  for (std::uint32_t i = 0; i < recv_depth_; ++i) all[i] = i;
  post_recv_slots(p, all.data(), all.size(), false);
  if (!p.error.empty()) raise(p);
}

void VerbsTransport::to_rtr_rts(Peer& p, const WireEndpoint& ep, std::uint32_t qpn,
                                std::uint32_t psn) {
  if (bool(ep.ethernet) != port_.ethernet)
    throw RunError(fmt::format("{}: verbs: link layers differ: {} uses {}, {} uses {}",
                               boot_.me(), port_.device, link_layer_name(port_.ethernet),
                               boot_.who(p.rank), link_layer_name(ep.ethernet)));
  p.path_mtu = common_mtu(port_.active_mtu, ep.active_mtu);
  p.chunk = std::min<std::uint64_t>({port_.max_msg_sz, ep.max_msg_sz, kMaxChunk});
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(p.path_mtu);
  a.dest_qp_num = qpn;
  a.rq_psn = psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = static_cast<std::uint8_t>(port_.port);
  a.ah_attr.dlid = ep.lid;
  if (port_.ethernet || ep.gid_index >= 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, ep.gid, 16);
    a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(port_.gid_index);
    a.ah_attr.grh.hop_limit = 64;
  }
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int e = ibv_modify_qp(p.qp, &a, mask))
    throw RunError(fmt::format("{}: verbs: ibv_modify_qp(RTR, to {} qpn {}, mtu {}): {}",
                               boot_.me(), boot_.who(p.rank), qpn, mtu_bytes(p.path_mtu),
                               std::strerror(e)));
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTS;
  r.timeout = static_cast<std::uint8_t>(qp_timeout_);
  r.retry_cnt = static_cast<std::uint8_t>(retry_cnt_);
  r.rnr_retry = 7;
  r.sq_psn = p.my_psn;
  r.max_rd_atomic = 1;
  mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
         IBV_QP_MAX_QP_RD_ATOMIC;
  if (int e = ibv_modify_qp(p.qp, &r, mask))
    throw RunError(fmt::format("{}: verbs: ibv_modify_qp(RTS, to {}): {}", boot_.me(),
                               boot_.who(p.rank), std::strerror(e)));
}

void VerbsTransport::connect(const std::vector<int>& peers) {
  std::vector<std::size_t> fresh;  // indexes of peers new in this call
  ensure_cq(peers_.size() + peers.size());
  peer_index_.resize(static_cast<std::size_t>(boot_.size()), -1);
  std::mt19937 rng(std::random_device{}());
  for (int r : peers) {
    if (r == boot_.rank() || r < 0 || r >= boot_.size())
      throw RunError(fmt::format("{}: verbs: connect() to invalid rank {}", boot_.me(), r));
    if (peer_index_[r] >= 0) continue;
    auto p = create_peer(r);
    p->index = peers_.size();
    p->my_psn = rng() & 0xffffff;
    to_init(*p);
    peer_index_[r] = static_cast<int>(p->index);
    fresh.push_back(p->index);
    peers_.push_back(std::move(p));
  }

  // My endpoint plus one (peer, qpn, psn) per new queue pair.
  WireEndpoint me;
  me.lid = port_.lid;
  me.ethernet = port_.ethernet;
  me.port = static_cast<std::uint8_t>(port_.port);
  me.gid_index = port_.gid_index;
  std::memcpy(me.gid, port_.gid.raw, 16);
  me.active_mtu = port_.active_mtu;
  me.max_msg_sz = port_.max_msg_sz;
  me.mailbox_addr = reinterpret_cast<std::uint64_t>(mailbox_->ptr);
  me.mailbox_rkey = mailbox_->mr->rkey;
  me.n_qps = static_cast<std::uint32_t>(fresh.size());
  std::vector<std::byte> blob(sizeof me + fresh.size() * sizeof(WireQp));
  std::memcpy(blob.data(), &me, sizeof me);
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    const Peer& p = *peers_[fresh[i]];
    WireQp q{p.rank, p.qp->qp_num, p.my_psn};
    std::memcpy(blob.data() + sizeof me + i * sizeof q, &q, sizeof q);
  }
  auto all = boot_.allgather(blob);

  for (std::size_t i : fresh) {
    Peer& p = *peers_[i];
    const auto& theirs = all.at(p.rank);
    WireEndpoint ep;
    std::memcpy(&ep, theirs.data(), sizeof ep);
    const WireQp* found = nullptr;
    for (std::uint32_t k = 0; k < ep.n_qps; ++k) {
      auto* q = reinterpret_cast<const WireQp*>(theirs.data() + sizeof ep) + k;
      if (q->peer == boot_.rank()) found = q;
    }
    if (!found)
      throw RunError(fmt::format("{}: verbs: connect() lists {} as a peer but that rank does not "
                                 "list this one (peers must be symmetric)",
                                 boot_.me(), boot_.who(p.rank)));
    p.remote_mailbox = ep.mailbox_addr + sizeof(std::uint64_t) * boot_.rank();
    p.remote_mailbox_rkey = ep.mailbox_rkey;
    to_rtr_rts(p, ep, found->qpn, found->psn);
  }
  // Nobody sends before every queue pair is ready to receive.
  boot_.barrier();
}

}  // namespace gdr::verbs
