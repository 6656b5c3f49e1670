// The UCX transport's class, shared by its two halves: ucx_transport.cpp
// (operations, metadata, registration) and ucx_connect.cpp (endpoints,
// handshake, shutdown). Private to transports/ucx.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "transports/transport.h"
#include "ucx_settings.h"
#include "send_cap.h"
#include "ucx_context.h"
#include "ucx_path.h"
#include "send_info.h"

namespace gdr::ucx {

class UcxRegion final : public MemRegion {
 public:
  UcxRegion(const Buffer& b, std::shared_ptr<ucx::Context> ctx, const Bootstrap& boot)
      : MemRegion(b), ctx_(std::move(ctx)), type_(ucx::memory_type(b.kind)) {
    if (b.bytes == 0) return;  // nothing to map; operations on it carry no memh
    ucp_mem_map_params_t p{};
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                   UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    p.address = b.ptr;
    p.length = b.bytes;
    p.memory_type = type_;
    ucs_status_t st = ucp_mem_map(ctx_->get(), &p, &memh_);
    if (st != UCS_OK)
      throw RunError(fmt::format("{}: ucp_mem_map of {} B of {} memory failed: {}", boot.me(),
                                 b.bytes, mem_name(b.kind), ucs_status_string(st)));
  }
  ~UcxRegion() override {
    if (memh_) ucp_mem_unmap(ctx_->get(), memh_);
  }
  ucp_mem_h memh() const { return memh_; }
  ucs_memory_type_t type() const { return type_; }

 private:
  std::shared_ptr<ucx::Context> ctx_;
  ucs_memory_type_t type_;
  ucp_mem_h memh_ = nullptr;
};

// One remote rank: its endpoint, the next sequence numbers each way, and
// the failure UCX reported for it (peer died, connection reset).
struct Peer {
  ucp_ep_h ep = nullptr;
  std::uint64_t send_seq = 0, recv_seq = 0;
  ucs_status_t failure = UCS_OK;
};

class UcxTransport final : public Transport {
 public:
  UcxTransport(Bootstrap& boot, const UcxSettings& s);
  ~UcxTransport() override;

  std::string_view name() const override { return "ucx"; }
  bool supports(MemKind k) const override {
    return k == MemKind::host || (k == MemKind::cuda && ctx_->supports_cuda());
  }
  // Why `direct` cannot move `k`, for make_transport's error. Deliberately
  // without `override`: it becomes one when Transport gains this virtual.
  std::string unsupported_reason(MemKind k) const override {
    return supports(k) ? std::string() : ucx::no_cuda_reason();
  }
  void connect(const std::vector<int>& peers) override;
  std::unique_ptr<MemRegion> register_memory(const Buffer& b) override {
    return std::make_unique<UcxRegion>(b, ctx_, boot_);
  }
  Request post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, static_cast<UcxRegion&>(r), off, len, true);
  }
  Request post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, static_cast<UcxRegion&>(r), off, len, false);
  }
  bool test(const Request& req) override;
  bool latency_preposts_receives() const override { return latency_prepost_; }
  std::vector<std::pair<std::string, std::string>> describe() const override;
  PathTaken path_taken(MemKind mem, std::size_t bytes, int peer) const override;

 private:
  // An operation in flight. `req` is null once UCX completed it (at once,
  // or when test() found it done); `info` receives the matched length.
  struct Slot {
    void* req = nullptr;
    ucs_status_t status = UCS_OK;
    ucp_tag_recv_info_t info{};
    std::uint64_t seq = 0;
    bool live = false;
    std::uint64_t seen_epoch = ~0ull;  // epoch_ when last tested unfinished
    bool capped = false;     // a device-memory send counted by cap_ while in flight
    bool deferred = false;   // queued by cap_, not started yet: what to start
    int peer = -1;
    void* ptr = nullptr;
    std::size_t len = 0;
    const UcxRegion* region = nullptr;
  };

  void launch(std::uint64_t id);
  void pump(int peer);

  Request post(int peer, UcxRegion& r, std::size_t off, std::size_t len, bool send);
  void* start(int peer, void* ptr, std::size_t len, bool send, std::uint64_t seq,
              const UcxRegion* r, Slot& s);
  std::uint64_t new_slot();
  // Polls slot `id`; true when done (status in the slot).
  bool poll(Slot& s, bool is_send);
  void check(const Slot& s, const Request& req) const;
  void handshake(const std::vector<int>& peers);
  void close_endpoints();
  std::string lanes() const;
  const ucx::EpInfo& ep_info(int peer) const;
  static std::string request_info(void* req);

  Bootstrap& boot_;
  std::shared_ptr<ucx::Context> ctx_;
  ucp_worker_h worker_ = nullptr;
  std::vector<Peer> peers_;       // indexed by rank; never resized (error handlers point here)
  std::vector<int> connected_;
  std::deque<Slot> slots_;        // a deque: `info` addresses stay valid while UCX writes them
  std::vector<std::uint64_t> free_;
  std::uint64_t epoch_ = 0;  // ucp_worker_progress calls so far; see poll()
  ucx::SendCap cap_;
  bool pass_memh_;  // ucp_request_param_t::memh on every operation
  bool latency_prepost_;  // GDR_UCX_LATENCY_PREPOST
  mutable std::map<int, ucx::EpInfo> ep_info_;  // ucp_ep_print_info per peer, parsed
  ucx::SendInfo send_info_;  // what UCX said of the first send of each length
};

}  // namespace gdr::ucx
