// The UCX transport's endpoints: created from the worker addresses the
// bootstrap exchanges, proven by a handshake, flush-closed at shutdown.
#include <fmt/format.h>

#include <exception>

#include "src/core/signals.h"
#include "src/core/wait_loop.h"
#include "ucx_transport.h"

namespace gdr::ucx {
namespace {

void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<Peer*>(arg)->failure = status;
}

}  // namespace

// --- connection ---------------------------------------------------------

void UcxTransport::connect(const std::vector<int>& peers) {
  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
  ucs_status_t st = ucp_worker_query(worker_, &wa);
  if (st != UCS_OK)
    throw RunError(fmt::format("{}: ucp_worker_query (address) failed: {}", boot_.me(),
                               ucs_status_string(st)));
  std::span<const std::byte> mine(reinterpret_cast<const std::byte*>(wa.address),
                                  wa.address_length);
  auto all = boot_.allgather(mine);
  ucp_worker_release_address(worker_, wa.address);
  for (int p : peers) {
    if (p == boot_.rank() || peers_[p].ep) continue;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(all[p].data());
    // Not UCP_ERR_HANDLING_MODE_PEER: in UCX 1.13 no shared-memory
    // transport supports it, so peer mode silently moves same-host ranks
    // to tcp. A dead peer is caught by our deadlines (and by mpirun)
    // instead; the handler still records what UCX reports.
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ep.err_handler.cb = on_peer_error;
    ep.err_handler.arg = &peers_[p];
    st = ucp_ep_create(worker_, &ep, &peers_[p].ep);
    if (st != UCS_OK)
      throw RunError(fmt::format("{}: ucp_ep_create to {} failed: {}", boot_.me(), boot_.who(p),
                                 ucs_status_string(st)));
    connected_.push_back(p);
  }
  handshake(peers);
}

// Sends each peer our rank and waits for theirs (sequence number 0 each
// way): wires the endpoints up outside any timed region, and proves both
// sides agree on who is who before the first real message.
void UcxTransport::handshake(const std::vector<int>& peers) {
  struct Hello {
    int peer;
    std::uint64_t out, in = ~0ull;
    std::uint64_t send_id = 0, recv_id = 0;
    bool send_done = false, recv_done = false;
  };
  std::deque<Hello> hellos;
  for (int p : peers) {
    if (p == boot_.rank()) continue;
    Hello& h = hellos.emplace_back(Hello{p, static_cast<std::uint64_t>(boot_.rank())});
    h.recv_id = new_slot();
    Slot& rs = slots_[h.recv_id];
    rs.seq = peers_[p].recv_seq++;
    rs.req = start(p, &h.in, sizeof h.in, false, rs.seq, nullptr, rs);
    h.send_id = new_slot();
    Slot& ss = slots_[h.send_id];
    ss.seq = peers_[p].send_seq++;
    ss.req = start(p, &h.out, sizeof h.out, true, ss.seq, nullptr, ss);
  }
  for (WaitLoop loop(boot_.timeout());;) {
    bool all = true;
    for (Hello& h : hellos) {
      Request rr{h.recv_id, h.peer, false, sizeof h.in}, sr{h.send_id, h.peer, true, sizeof h.out};
      if (!h.recv_done) h.recv_done = test(rr);
      if (!h.send_done) h.send_done = test(sr);
      all = all && h.recv_done && h.send_done;
    }
    if (all) break;
    if (!loop.tick() || !loop.expired()) continue;
    for (Hello& h : hellos)
      if (!h.recv_done || !h.send_done)
        throw TimeoutError(fmt::format(
            "{}: timed out after {:g} s connecting over UCX to {} (no {} yet); is that rank "
            "alive and running the same sweep?",
            boot_.me(), boot_.timeout(), boot_.who(h.peer),
            h.recv_done ? "send completion" : "hello from it"));
  }
  for (Hello& h : hellos)
    if (h.in != static_cast<std::uint64_t>(h.peer))
      throw RunError(fmt::format("{}: UCX hello from {} says it is rank {}: endpoints mixed up",
                                 boot_.me(), boot_.who(h.peer), h.in));
}

// --- shutdown -----------------------------------------------------------

UcxTransport::~UcxTransport() {
  // Operations still in flight (a test threw): cancel and let UCX release them.
  int in_flight = 0;
  for (Slot& s : slots_)
    if (s.req) {
      ++in_flight;
      ucp_request_cancel(worker_, s.req);
      ucp_request_free(s.req);
      s.req = nullptr;
    }
  if (in_flight && std::uncaught_exceptions() == 0)
    fmt::print(stderr, "gdrbench: {}: {} UCX operations were still in flight at shutdown\n",
               boot_.me(), in_flight);
  boot_.remove_idle_progress(this);
  // Interrupted, the process is about to end and rank 0 still has to close
  // the result file. Tearing down now hurts it: with operations in flight
  // UCX's own assertions can abort the process (Debian's 1.13: "arbiter
  // group is not empty" in the cma endpoint, which left the file `running`),
  // and closing a healthy endpoint resets rank 0's receives from this rank
  // (its file then said `failed`). The worker is left to the process's exit.
  if (interrupted()) return;
  close_endpoints();
  if (worker_) ucp_worker_destroy(worker_);
}

// Flush-closes every endpoint so nothing we sent is lost, bounded by the
// bootstrap timeout. A flush may need the peer to progress its worker, so
// when we are unwinding from an error (the peer may sit in an MPI call, or
// be dead) or the peer already failed, endpoints are force-closed at once:
// a failing run reports its error without first waiting out the timeout.
void UcxTransport::close_endpoints() {
  struct Closing {
    int peer;
    void* req;
  };
  const bool unwinding = std::uncaught_exceptions() > 0;
  std::vector<Closing> closing;
  for (int p : connected_) {
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = unwinding || peers_[p].failure != UCS_OK ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t r = ucp_ep_close_nbx(peers_[p].ep, &prm);
    peers_[p].ep = nullptr;
    if (r && !UCS_PTR_IS_ERR(r)) closing.push_back({p, r});
  }
  Deadline deadline(boot_.timeout());
  while (!closing.empty() && !deadline.expired()) {
    ucp_worker_progress(worker_);
    std::erase_if(closing, [](Closing& c) {
      if (ucp_request_check_status(c.req) == UCS_INPROGRESS) return false;
      ucp_request_free(c.req);
      return true;
    });
  }
  for (Closing& c : closing) {
    fmt::print(stderr, "gdrbench: {}: closing the UCX endpoint to {} timed out after {:g} s\n",
               boot_.me(), boot_.who(c.peer), boot_.timeout());
    ucp_request_free(c.req);  // ucp_worker_destroy releases the endpoint
  }
}

}  // namespace gdr::ucx
