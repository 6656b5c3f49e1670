#include "verbs_transport.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include <sched.h>

#include <fmt/format.h>

#include "../../src/bootstrap.h"
#include "../../src/errors.h"
#include "cuda_driver.h"
#include "verbs_options.h"

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

// A clear-to-send: "write your next message to me here".
struct CtlMsg {
  std::uint32_t magic;
  std::uint32_t region;
  std::uint64_t offset, length;
  std::uint32_t seq, pad;
};
constexpr std::uint32_t kCtsMagic = 0x67647243;  // "gdrC"
constexpr std::size_t kSlotBytes = 64;
static_assert(sizeof(CtlMsg) <= kSlotBytes);

constexpr std::uint32_t kSendDepth = 256;
constexpr std::uint32_t kRecvDepth = 256;
constexpr std::uint32_t kAnnounceBatch = 32;
constexpr std::uint64_t kMaxChunk = 1ull << 30;
constexpr std::uint32_t kRxeVendorId = 0xffffff;  // Soft-RoCE
constexpr std::uint32_t kSiwVendorId = 0x626d74;  // soft iWARP ("bmt")
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// wr_id: kind in the top byte, peer index, then a slot number.
enum class Wr : std::uint8_t { recv = 1, ctl = 2, data = 3, credit = 4 };
std::uint64_t wr_id(Wr k, std::size_t peer, std::uint32_t slot) {
  return (std::uint64_t(k) << 56) | (std::uint64_t(peer) << 24) | slot;
}
Wr wr_kind(std::uint64_t id) { return static_cast<Wr>(id >> 56); }
std::size_t wr_peer(std::uint64_t id) { return (id >> 24) & 0xffffffffu; }
std::uint32_t wr_slot(std::uint64_t id) { return id & 0xffffffu; }

// An integer from the environment within [lo, hi], else `dflt`.
int env_int(const char* name, int dflt, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi)
    throw UsageError(fmt::format("{}={}: want an integer in [{}, {}]", name, v, lo, hi));
  return static_cast<int>(x);
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
  bool done = false;
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
  std::deque<std::pair<Wr, std::uint64_t>> sq;  // posted send WRs (kind, op), completed in order
  std::deque<std::uint64_t> recv_unadvertised, recv_advertised, sends_unposted;
  std::deque<CtlMsg> cts;
  std::uint32_t send_seq = 0, recv_seq = 0, my_psn = 0;
  std::uint32_t send_depth = 0;
  std::string error;
  bool sq_full() const { return sq.size() >= send_depth; }
  std::byte* recv_slot(std::uint32_t i) const {
    return static_cast<std::byte*>(slots->ptr) + std::size_t(i) * kSlotBytes;
  }
};

// ---- small registered buffers and regions ----

HostMr::HostMr(ibv_pd* pd, std::size_t bytes, int access, const std::string& who) {
  bytes = (bytes + 4095) & ~std::size_t(4095);
  ptr = std::aligned_alloc(4096, bytes);
  if (!ptr) throw RunError(fmt::format("{}: verbs: out of memory ({} B)", who, bytes));
  std::memset(ptr, 0, bytes);
  mr = ibv_reg_mr(pd, ptr, bytes, access);
  if (!mr) {
    int e = errno;
    std::free(ptr);
    throw RunError(fmt::format("{}: verbs: ibv_reg_mr({} B of host memory): {} (check ulimit -l)",
                               who, bytes, std::strerror(e)));
  }
}

HostMr::~HostMr() {
  if (mr) ibv_dereg_mr(mr);
  std::free(ptr);
}

VerbsRegion::VerbsRegion(const Buffer& b, std::shared_ptr<DeviceContext> dev, ibv_mr* mr,
                         int dmabuf_fd, std::uint32_t id, std::string mode)
    : MemRegion(b), dev_(std::move(dev)), mr_(mr), dmabuf_fd_(dmabuf_fd), id_(id),
      mode_(std::move(mode)) {}

VerbsRegion::~VerbsRegion() {
  if (mr_) ibv_dereg_mr(mr_);
  if (dmabuf_fd_ >= 0) ::close(dmabuf_fd_);
}

// ---- set-up ----

VerbsTransport::VerbsTransport(Bootstrap& boot) : boot_(boot) {
  dev_ = open_device(verbs_options(), boot.local_rank(), boot.me(), port_);
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
  retry_cnt_ = env_int("GDR_VERBS_RETRY_CNT", da.vendor_id == kRxeVendorId ? 6 : 7, 0, 7);
  qp_timeout_ = env_int("GDR_VERBS_QP_TIMEOUT", 14, 1, 31);  // 4.096 us * 2^14 = 67 ms a try
  mailbox_ = std::make_unique<HostMr>(dev_->pd, sizeof(std::uint64_t) * boot.size(), kAccess,
                                      boot.me());
  remote_.resize(boot.size());
}

VerbsTransport::~VerbsTransport() {
  for (auto& p : peers_) {
    if (p->qp) ibv_destroy_qp(p->qp);
    p->slots.reset();
  }
  if (cq_) ibv_destroy_cq(cq_);
}

bool VerbsTransport::supports(MemKind k) const {
  if (k == MemKind::host) return true;
  auto& cu = CudaDriver::get();
  return cu.loaded() && cu.device_count() > 0;
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
    cq_ = ibv_create_cq(dev_->ctx, want, nullptr, nullptr, 0);
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
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq_;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = send_depth_;
  a.cap.max_recv_wr = recv_depth_;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  p->qp = ibv_create_qp(dev_->pd, &a);
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
  for (std::uint32_t i = 0; i < recv_depth_; ++i) post_recv_slot(p, i);
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
  ensure_cq(peer_index_.size() + peers.size());
  std::mt19937 rng(std::random_device{}());
  for (int r : peers) {
    if (r == boot_.rank() || r < 0 || r >= boot_.size())
      throw RunError(fmt::format("{}: verbs: connect() to invalid rank {}", boot_.me(), r));
    if (peer_index_.count(r)) continue;
    auto p = create_peer(r);
    p->index = peers_.size();
    p->my_psn = rng() & 0xffffff;
    to_init(*p);
    peer_index_[r] = p->index;
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

// ---- memory ----

ibv_mr* VerbsTransport::register_cuda(const Buffer& b, int& fd, std::string& mode) {
  auto& cu = CudaDriver::get();
  auto ptr = reinterpret_cast<std::uint64_t>(b.ptr);
  std::string dmabuf_error, peermem_error;
  // 1. dma-buf: the kernel's own way to share device memory (no extra module).
  std::uint64_t offset = b.dmabuf_offset;
  fd = b.dmabuf_fd >= 0 ? ::dup(b.dmabuf_fd) : -1;
  if (fd < 0) {
    auto range = page_aligned(ptr, b.bytes, static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
    fd = cu.dmabuf_fd(range.base, range.size, dmabuf_error);
    offset = range.offset;
  }
  if (fd >= 0) {
    if (ibv_mr* mr = ibv_reg_dmabuf_mr(dev_->pd, offset, b.bytes, ptr, fd, kAccess)) {
      mode = "dmabuf";
      return mr;
    }
    dmabuf_error = fmt::format("ibv_reg_dmabuf_mr(fd {}, offset {}, {} B): {} (errno {})", fd,
                               offset, b.bytes, std::strerror(errno), errno);
    ::close(fd);
    fd = -1;
  }
  // 2. peer memory: ibv_reg_mr on the device pointer, through nvidia_peermem.
  if (ibv_mr* mr = ibv_reg_mr(dev_->pd, b.ptr, b.bytes, kAccess)) {
    mode = "peermem";
    return mr;
  }
  peermem_error = fmt::format("ibv_reg_mr(device pointer {}, {} B): {} (errno {})", b.ptr,
                              b.bytes, std::strerror(errno), errno);
  throw RunError(fmt::format(
      "{}: verbs: cannot register GPU memory (device {}) with {}: dma-buf: {}; peer memory: {}. "
      "Check: driver and kernel dma-buf support (CUDA 11.7+ open kernel modules, Linux 5.12+), "
      "`lsmod | grep nvidia_peermem`, and `gdrbench doctor`",
      boot_.me(), b.device, port_.device, dmabuf_error, peermem_error));
}

std::unique_ptr<MemRegion> VerbsTransport::register_memory(const Buffer& b) {
  std::uint32_t id = next_region_++;
  ibv_mr* mr = nullptr;
  int fd = -1;
  std::string mode = "host", error;
  try {
    if (b.kind == MemKind::cuda) {
      mr = register_cuda(b, fd, mode);
      if (auto e = CudaDriver::get().set_sync_memops(reinterpret_cast<std::uint64_t>(b.ptr));
          !e.empty())
        throw RunError(fmt::format("{}: verbs: {}", boot_.me(), e));
    } else if (!(mr = ibv_reg_mr(dev_->pd, b.ptr, b.bytes, kAccess))) {
      throw RunError(fmt::format("{}: verbs: ibv_reg_mr({} B of host memory) on {}: {} (check "
                                 "ulimit -l)",
                                 boot_.me(), b.bytes, port_.device, std::strerror(errno)));
    }
  } catch (const RunError& e) {
    error = e.what();
  }
  auto region = mr ? std::make_unique<VerbsRegion>(b, dev_, mr, fd, id, mode) : nullptr;

  // Collective: every rank learns every region's address and key, and
  // whether anyone failed (so nobody waits for a rank that gave up).
  WireRegion w{reinterpret_cast<std::uint64_t>(b.ptr), b.bytes, mr ? mr->rkey : 0, mr ? 1u : 0u};
  auto all = boot_.allgather(std::as_bytes(std::span(&w, 1)));
  if (!error.empty()) throw RunError(error);
  for (int r = 0; r < boot_.size(); ++r) {
    WireRegion theirs;
    std::memcpy(&theirs, all.at(r).data(), sizeof theirs);
    if (!theirs.ok)
      throw RunError(fmt::format("{}: verbs: {} could not register its buffer {}", boot_.me(),
                                 boot_.who(r), id));
    remote_[r][id] = {theirs.addr, theirs.bytes, theirs.rkey};
  }
  if (b.kind == MemKind::cuda) registration_ = mode;
  return region;
}

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
