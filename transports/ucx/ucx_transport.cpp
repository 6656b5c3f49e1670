// UCX (UCP tag API) as the wire: one worker per transport, endpoints to the
// peers from worker addresses exchanged through the bootstrap, non-blocking
// ucp_tag_send_nbx / ucp_tag_recv_nbx polled by test().
//
// Posting-order matching is made exact by the tag, not left to UCX's
// ordering: the k-th message from rank s to rank d carries the tag (s, k)
// and the k-th receive d posts from s asks for exactly (s, k) with a full
// mask. Any number of messages may be in flight, of any protocol (eager or
// rendezvous), and each lands in its own receive.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <string>

#include "src/core/bootstrap.h"
#include "src/doctor/doctor.h"
#include "src/core/errors.h"
#include "src/core/signals.h"
#include "src/core/wait_loop.h"
#include "ucx_transport.h"
#include "ucx_settings.h"
#include "src/core/component_options.h"

namespace gdr::ucx {
namespace {

// Tag layout: 24 bits of source rank, 40 bits of per-(source, destination)
// sequence number (wraps after 2^40 messages, far beyond any run).
constexpr int kSeqBits = 40;
constexpr std::uint64_t kSeqMask = (1ull << kSeqBits) - 1;
constexpr std::uint64_t kFullMask = ~0ull;
constexpr int kMaxRanks = 1 << (64 - kSeqBits);

std::uint64_t make_tag(int src, std::uint64_t seq) {
  return (static_cast<std::uint64_t>(src) << kSeqBits) | (seq & kSeqMask);
}

// The registration handle is off by default, as in ucx_perftest (which
// passes it only when asked to pre-register): with it, 8 B of device memory
// was 0.7 us slower under MPS (H200, UCX 1.22, 2026-12-03); the request query
// names rendezvous there with and without it (2026-12-04).
// GDR_UCX_PASS_MEMH=1 passes it, to measure what the handle changes on a
// given UCX; UCX 1.13 declares the field, but only the v2 protocols (default
// from 1.15) use it, so 1 is refused below that.
#if UCP_API_VERSION >= UCP_VERSION(1, 15)
constexpr bool kMemhUsable = true;
#else
constexpr bool kMemhUsable = false;
#endif

std::string parse_pass_memh(std::string_view t, UcxSettings& s) {
  if (t != "0" && t != "1") return "want 0 or 1";
  if (t == "1" && !kMemhUsable)
    return fmt::format("1 needs UCX API 1.15 or later (built against {}.{})", UCP_API_MAJOR, UCP_API_MINOR);
  s.pass_memh = t == "1";
  return {};
}

GDR_REGISTER_OPTIONS(reg_ucx_options, declare_options<UcxSettings>(ComponentOptions::Owner::transport, "ucx", {
    {{"", "GDR_UCX_CUDA_MAX_SENDS", "ucx: device-memory sends in flight per peer (0 = no cap)"},
     setting::whole(&UcxSettings::cuda_max_sends, 0, 1'000'000)},
    {{"", "GDR_UCX_PASS_MEMH", "ucx: pass the registration handle on operations (0 or 1; UCX API >= 1.15)"},
     parse_pass_memh},
    {{"", "GDR_UCX_LATENCY_PREPOST", "ucx: latency posts its batch of receives ahead (1) or one per round trip (0, default)"},
     setting::whole(&UcxSettings::latency_prepost, 0, 1)},
}));

}  // namespace

UcxTransport::UcxTransport(Bootstrap& boot, const UcxSettings& s)
    : boot_(boot), ctx_(ucx::Context::create()), peers_(boot.size()),
      cap_(boot.size(), s.cuda_max_sends),
      pass_memh_(s.pass_memh == 1), latency_prepost_(s.latency_prepost == 1) {
  if (boot.size() > kMaxRanks)
    throw UsageError(fmt::format("ucx transport: {} ranks exceed its tag space ({})",
                                 boot.size(), kMaxRanks));
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucs_status_t st = ucp_worker_create(ctx_->get(), &wp, &worker_);
  if (st != UCS_OK)
    throw RunError(fmt::format("{}: ucp_worker_create failed: {}", boot.me(),
                               ucs_status_string(st)));
  // A send or receive that completed here may still owe the peer its
  // rendezvous' last message (ATS/ATP), which UCX sends only when
  // progressed: keep progressing while this rank waits in a barrier, or
  // the peer waits for it forever (the "stall" of many rendezvous of
  // device memory in flight, seen with UCX 1.13 on cuda_ipc).
  boot_.add_idle_progress(this, [this] { ucp_worker_progress(worker_); });
}

// --- operations ---------------------------------------------------------

std::uint64_t UcxTransport::new_slot() {
  std::uint64_t id;
  if (free_.empty()) {
    id = slots_.size();
    slots_.emplace_back();
  } else {
    id = free_.back();
    free_.pop_back();
    slots_[id] = Slot{};
  }
  slots_[id].live = true;
  return id;
}

Request UcxTransport::post(int peer, UcxRegion& r, std::size_t off, std::size_t len, bool send) {
  if (peer < 0 || peer >= boot_.size() || !peers_[peer].ep)
    throw RunError(fmt::format("{}: ucx transport has no endpoint to rank {} (not in connect())",
                               boot_.me(), peer));
  Peer& p = peers_[peer];
  if (p.failure != UCS_OK)
    throw RunError(fmt::format("{}: UCX endpoint to {} failed earlier: {}", boot_.me(),
                               boot_.who(peer), ucs_status_string(p.failure)));
  std::uint64_t id = new_slot();
  Slot& s = slots_[id];
  s.seq = send ? p.send_seq++ : p.recv_seq++;
  s.peer = peer;
  s.ptr = r.at(off);
  s.len = len;
  s.region = &r;
  if (send && r.type() == UCS_MEMORY_TYPE_CUDA && cap_.must_defer(peer)) {
    s.deferred = true;
    cap_.defer(peer, id);
  } else if (send && r.type() == UCS_MEMORY_TYPE_CUDA) {
    launch(id);
  } else {
    s.req = start(peer, s.ptr, len, send, s.seq, &r, s);
  }
  return Request{id, peer, send, len};
}

// Starts a capped (device-memory) send now.
void UcxTransport::launch(std::uint64_t id) {
  Slot& s = slots_[id];
  s.deferred = false;
  s.req = start(s.peer, s.ptr, s.len, true, s.seq, s.region, s);
  s.capped = s.req != nullptr;
  if (s.capped) cap_.started(s.peer);
}

// Starts the queued sends to `peer` that the cap lets go now.
void UcxTransport::pump(int peer) {
  while (std::optional<std::uint64_t> id = cap_.next(peer)) launch(*id);
}

// Issues one operation; returns UCX's request, or null when it completed
// at once. Errors at posting time throw with both ranks named.
void* UcxTransport::start(int peer, void* ptr, std::size_t len, bool send, std::uint64_t seq,
                          const UcxRegion* r, Slot& s) {
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  prm.memory_type = r ? r->type() : UCS_MEMORY_TYPE_HOST;
  if (pass_memh_ && r && r->memh()) {
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    prm.memh = r->memh();
  }
  ucs_status_ptr_t sp;
  // The first send of each (peer, memory type, length) keeps its request so
  // that UCX can say which protocol and transports it chose (path_taken).
  const bool ask = send && send_info_.wanted(peer, prm.memory_type, len);
  if (ask) prm.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (send) {
    sp = ucp_tag_send_nbx(peers_[peer].ep, ptr, len, make_tag(boot_.rank(), seq), &prm);
    if (ask && UCS_PTR_IS_PTR(sp)) send_info_.note(peer, prm.memory_type, len, request_info(sp));
  } else {
    // UCX 1.13 leaves recv_info unwritten when a receive matches an
    // already-arrived message at once, so the length check could not be
    // made: always get a request and read the length from it.
    prm.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    sp = ucp_tag_recv_nbx(worker_, ptr, len, make_tag(peer, seq), kFullMask, &prm);
  }
  if (UCS_PTR_IS_ERR(sp))
    throw RunError(fmt::format("{}: {} of {} B {} {} failed to start: {}", boot_.me(),
                               send ? "ucp_tag_send_nbx" : "ucp_tag_recv_nbx", len,
                               send ? "to" : "from", boot_.who(peer),
                               ucs_status_string(UCS_PTR_STATUS(sp))));
  if (!sp) s.status = UCS_OK;
  return sp;
}

bool UcxTransport::poll(Slot& s, bool is_send) {
  if (s.deferred) {
    ucp_worker_progress(worker_);
    pump(s.peer);
    if (s.deferred) return false;
  }
  if (!s.req) return true;
  auto status = [&] {
    return is_send ? ucp_request_check_status(s.req) : ucp_tag_recv_request_test(s.req, &s.info);
  };
  ucs_status_t st = status();
  if (st == UCS_INPROGRESS) {
    // Progress only when this request was already seen unfinished since the
    // last ucp_worker_progress: a wait over a window of 128 requests then
    // progresses once per pass over them, not 128 times (each progress polls
    // every UCX transport, CUDA events included), and a wait on one request
    // progresses on every test as before.
    if (s.seen_epoch != epoch_) {
      s.seen_epoch = epoch_;
      return false;
    }
    ucp_worker_progress(worker_);
    s.seen_epoch = ++epoch_;
    st = status();
    if (st == UCS_INPROGRESS) return false;
  }
  ucp_request_free(s.req);
  s.req = nullptr;
  s.status = st;
  if (s.capped) {
    s.capped = false;
    cap_.finished(s.peer);
    pump(s.peer);
  }
  return true;
}

bool UcxTransport::test(const Request& req) {
  Slot& s = slots_.at(req.id);
  if (!s.live)
    throw RunError(fmt::format("{}: ucx transport tested a request twice or never posted (id {})",
                               boot_.me(), req.id));
  if (!poll(s, req.is_send)) return false;
  s.live = false;
  free_.push_back(req.id);
  check(s, req);
  return true;
}

// A completed operation must have succeeded and, for a receive, filled
// exactly the posted length (the interface requires equal lengths).
void UcxTransport::check(const Slot& s, const Request& req) const {
  const char* what = req.is_send ? "send" : "receive";
  const char* dir = req.is_send ? "to" : "from";
  if (s.status != UCS_OK) {
    ucs_status_t ep = peers_[req.peer].failure;
    throw RunError(fmt::format("{}: UCX {} of {} B {} {} (message {}) failed: {}{}", boot_.me(),
                               what, req.bytes, dir, boot_.who(req.peer), s.seq,
                               ucs_status_string(s.status),
                               ep != UCS_OK ? fmt::format(" (endpoint: {})", ucs_status_string(ep))
                                            : std::string()));
  }
  if (!req.is_send && s.info.length != req.bytes)
    throw RunError(fmt::format(
        "{}: UCX receive {} {} (message {}) got {} B but {} B were posted: the two ranks' "
        "operations are out of step",
        boot_.me(), dir, boot_.who(req.peer), s.seq, s.info.length, req.bytes));
}

// --- metadata -----------------------------------------------------------

// ucp_request_query's description of a request in flight; on failure "!"
// and UCX's reason, kept so that a path left unknown can say why.
std::string UcxTransport::request_info(void* req) {
  char text[512] = {};
  ucp_request_attr_t a{};
  a.field_mask = UCP_REQUEST_ATTR_FIELD_INFO_STRING | UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE;
  a.debug_string = text;
  a.debug_string_size = sizeof text;
  ucs_status_t st = ucp_request_query(req, &a);
  if (st != UCS_OK) return fmt::format("!ucp_request_query: {}", ucs_status_string(st));
  return text[0] ? std::string(text) : std::string("!ucp_request_query: an empty info string");
}

// ucp_ep_print_info of the endpoint to `peer`, parsed once.
const ucx::EpInfo& UcxTransport::ep_info(int peer) const {
  auto it = ep_info_.find(peer);
  return it != ep_info_.end() ? it->second : (ep_info_[peer] = ucx::ep_info_of(peers_[peer].ep));
}

// The transports UCX chose for the first endpoint, e.g. "posix/memory,cma/memory":
// from ucp_ep_query where UCX has UCP_EP_ATTR_FIELD_TRANSPORTS (1.14), else
// from ucp_ep_print_info.
std::string UcxTransport::lanes() const {
  if (connected_.empty()) return {};
#if UCP_API_VERSION >= UCP_VERSION(1, 14)
  ucp_transport_entry_t e[32];
  ucp_ep_attr_t a{};
  a.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
  a.transports.entries = e;
  a.transports.num_entries = 32;
  a.transports.entry_size = sizeof(ucp_transport_entry_t);
  if (ucp_ep_query(peers_[connected_.front()].ep, &a) == UCS_OK && a.transports.num_entries > 0) {
    std::string out;
    for (unsigned i = 0; i < a.transports.num_entries; ++i) {
      std::string one = fmt::format("{}/{}", e[i].transport_name, e[i].device_name);
      if (out.find(one) == std::string::npos) out += (out.empty() ? "" : ",") + one;
    }
    return out;
  }
#endif
  return ucx::lane_names(ep_info(connected_.front()));
}

// This rank's view of what moved `bytes` to `peer`: what UCX said of the
// send of that length (or the largest shorter one: a ring sends chunks),
// else the endpoint's printout (UCX 1.13). No send to `peer` at all (a
// receiver): no view, the sender's counts.
PathTaken UcxTransport::path_taken(MemKind mem, std::size_t bytes, int peer) const {
  if (peer < 0 || peer >= boot_.size() || !peers_[peer].ep) return {};
  const bool device = mem == MemKind::cuda;
  const std::string* said = send_info_.find(peer, ucx::memory_type(mem), bytes);
  if (!said) return {};
  if (std::optional<ucx::SendProto> s = ucx::parse_send_info(*said))
    return ucx::path_from_send(*s, device, ucx::md_reaches_cuda);
  // UCX 1.13 (protocols v1): the printout's tag_send ranges.
  PathTaken p = ucx::path_for(ep_info(peer), device, bytes, ucx::md_reaches_cuda);
  if (p.unknown.empty()) return p;
  // Protocols v2 whose request said nothing: the printout's protocol table,
  // printed now (UCX fills it as sizes are used).
  const std::string text = ucx::ep_print(peers_[peer].ep);
  if (auto row = ucx::proto_table_row(text, device ? "cuda" : "host", bytes)) {
    PathTaken t = ucx::path_from_send(*row, device, ucx::md_reaches_cuda);
    t.how += fmt::format(" (from ucp_ep_print_info's protocol table; the request query said '{}')", *said);
    return t;
  }
  p.unknown += fmt::format("; the request query said '{}'", (*said)[0] == '!' ? said->substr(1) : *said);
  return p;
}

std::vector<std::pair<std::string, std::string>> UcxTransport::describe() const {
  const char* tls = std::getenv("UCX_TLS");
  std::vector<std::pair<std::string, std::string>> f = {
      {"ucx.version", ucx::version()},
      {"ucx.api", fmt::format("{}.{}", UCP_API_MAJOR, UCP_API_MINOR)},
      {"ucx.library", ucx::library_path()},
      {"ucx.cuda", ctx_->supports_cuda() ? "yes" : "no: " + ucx::no_cuda_reason()},
      {"ucx.memory_types", ucx::memory_type_names(ctx_->memory_types())},
      {"ucx.tls", tls ? tls : "default (UCX_TLS unset)"},
      {"ucx.memh_hint", pass_memh_ ? "yes" : "no (memory type hint only)"},
      {"ucx.cuda_max_sends", cap_.limit() > 0 ? fmt::format("{} per peer (GDR_UCX_CUDA_MAX_SENDS)", cap_.limit())
                                              : std::string("no cap (GDR_UCX_CUDA_MAX_SENDS=0)")},
      {"ucx.err_mode", "none"}};
  if (std::string l = lanes(); !l.empty()) f.emplace_back("ucx.lanes", l);
  return f;
}

namespace {
std::string unavailable() { return ucx::probe().error; }

GDR_REGISTER_TRANSPORT(reg_ucx, "ucx",
                       "UCX UCP tag send/recv; device memory needs a UCX built with CUDA",
                       unavailable,
                       [](Bootstrap& b, const Settings& s) { return std::make_unique<UcxTransport>(b, s.get<UcxSettings>()); },
                       [](MemKind k) {
                         if (k != MemKind::cuda) return fmt::format("UCX takes host and cuda memory, not {}", mem_name(k));
                         return ucx::probe().cuda ? std::string() : ucx::no_cuda_reason();
                       });
// -m cuda --path direct needs a UCX built with CUDA (the doctor's versions/ucx).
GDR_REGISTER_READINESS(reg_ucx_readiness, "ucx", [](const doctor::Check& c, bool cuda_direct) {
  return cuda_direct && c.area == "versions" && c.name == "ucx" ? doctor::Weight::strict : doctor::Weight::ignored;
});

}  // namespace
}  // namespace gdr::ucx
