// The host-staged path over any transport's host path.
//
// A message to or from a peer is cut into chunks of `chunk_bytes`; the k-th
// chunk on a (peer, direction) lane uses staging slot k mod `slots`. A send
// chunk goes: copy device -> pinned slot (background copy), then the inner
// transport's send from the slot. A receive chunk goes: the inner receive
// into the slot, then a background copy slot -> device. With several slots
// per lane, the copies of some chunks overlap the wire transfer of others,
// so a long message moves at the pace of the slowest stage, not their sum.
//
// Matching: both sides cut a message alike (the lengths match by the
// interface's contract), and each lane hands chunks to the inner transport
// in order, so the k-th inner message still meets the k-th inner receive.
// Staging memory is fixed at connect(): 2 x slots x chunk per peer.
#include "staged_transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include "src/core/sizes.h"
#include "src/core/bootstrap.h"
#include "src/core/errors.h"

namespace gdr {
namespace {

enum class Stage { idle, copy, wire };

struct Slot {
  Stage stage = Stage::idle;
  std::size_t pool_off = 0;  // where the slot lives in the registered pinned pool
  bool has_copy = false;     // zero-byte chunks skip the copy
  std::uint64_t ticket = 0;
  Request inner;
  std::uint64_t msg = 0;
  std::size_t user_off = 0, len = 0;
};

// One user message; finished when all its chunks are.
struct Message {
  std::byte* user = nullptr;
  bool host = false;  // the user's buffer is host memory: memcpy, no device copy
  std::size_t len = 0, chunks = 1, started = 0, finished = 0;
};

// One peer, one direction.
struct Lane {
  int peer = -1;
  bool send = false;
  std::vector<Slot> slots;
  std::deque<std::uint64_t> waiting;  // messages with chunks not started, posting order
  std::size_t started = 0;            // chunks started on this lane
  std::size_t posted = 0;             // send lanes: chunks handed to the wire
};

class StagedTransport final : public Transport {
 public:
  StagedTransport(std::unique_ptr<Transport> inner, Bootstrap& boot, MemoryOps& mem,
                  const StagingConfig& cfg)
      : inner_(std::move(inner)), boot_(boot), mem_(mem), cfg_(cfg) {
    if (cfg_.slots < 2) cfg_.slots = 2;  // one slot would serialize copy and wire
    if (cfg_.chunk_bytes == 0) cfg_.chunk_bytes = 1;
  }

  ~StagedTransport() override {
    pool_region_.reset();  // unregister before the memory goes
    if (pool_) mem_.free_pinned(pool_);
  }

  std::string_view name() const override { return inner_->name(); }
  bool supports(MemKind k) const override { return k == mem_.kind() || k == MemKind::host; }

  void connect(const std::vector<int>& peers) override {
    inner_->connect(peers);
    const std::size_t per_lane = static_cast<std::size_t>(cfg_.slots) * cfg_.chunk_bytes;
    // One pool and one registration on every rank (registration is
    // collective), even with no peers.
    pool_bytes_ = std::max<std::size_t>(2 * per_lane * peers.size(), 4096);
    pool_ = static_cast<std::byte*>(mem_.alloc_pinned(pool_bytes_));
    pool_region_ = inner_->register_memory(Buffer{pool_, pool_bytes_, MemKind::host, -1, -1, 0});
    std::size_t off = 0;
    for (int p : peers)
      for (bool send : {true, false}) {
        Lane& l = lanes_[{p, send}];
        l.peer = p;
        l.send = send;
        l.slots.resize(cfg_.slots);
        for (Slot& s : l.slots) {
          s.pool_off = off;
          off += cfg_.chunk_bytes;
        }
      }
  }

  std::unique_ptr<MemRegion> register_memory(const Buffer& b) override {
    return std::make_unique<MemRegion>(b);  // only the pinned pool meets the inner transport
  }

  Request post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, r.at(off), len, true, host_side(r));
  }
  Request post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, r.at(off), len, false, host_side(r));
  }
  // A host buffer beside the staged memory (a bw acknowledgement): copied with
  // memcpy, never by the staged kind's copy engine.
  bool host_side(const MemRegion& r) const { return r.buffer().kind == MemKind::host && mem_.kind() != MemKind::host; }

  bool test(const Request& req) override {
    auto it = messages_.find(req.id);
    if (it == messages_.end())
      throw RunError(fmt::format("{}: staged {}: test of an unknown or completed request",
                                 boot_.me(), inner_->name()));
    if (it->second.finished < it->second.chunks) progress_all();
    if (it->second.finished < it->second.chunks) return false;
    messages_.erase(it);
    return true;
  }

  // The wire carries pinned host memory, so the inner transport's host mode.
  std::string mode(MemKind) const override { return inner_->mode(MemKind::host); }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    auto facts = inner_->describe();
    facts.emplace_back("staged.chunk_bytes", std::to_string(cfg_.chunk_bytes));
    facts.emplace_back("staged.slots_per_peer_direction", std::to_string(cfg_.slots));
    facts.emplace_back("staged.pinned_bytes", std::to_string(pool_bytes_));
    return facts;
  }
  NetDevice device() const override { return inner_->device(); }
  // Staged by design, so never flagged: the chunking, then what the inner
  // transport did with each chunk (host memory, so its own path).
  PathTaken path_taken(MemKind, std::size_t bytes, int peer) const override {
    std::size_t chunk = std::min(bytes, cfg_.chunk_bytes);
    std::size_t chunks = bytes == 0 ? 1 : (bytes + cfg_.chunk_bytes - 1) / cfg_.chunk_bytes;
    PathTaken inner = inner_->path_taken(MemKind::host, chunk, peer);
    PathTaken p;
    p.how = fmt::format("staged: {} chunk(s) of {} B through {} pinned slots; wire: {}", chunks, chunk,
                        cfg_.slots, inner.how.empty() ? std::string(inner_->name()) : inner.how);
    p.links = {"copy-d2h", "copy-h2d"};
    p.links.insert(p.links.end(), inner.links.begin(), inner.links.end());
    return p;
  }

 private:
  Request post(int peer, std::byte* user, std::size_t len, bool send, bool host) {
    auto lane = lanes_.find({peer, send});
    if (lane == lanes_.end())
      throw RunError(fmt::format("{}: staged {}: {} {} which connect() was not given", boot_.me(),
                                 inner_->name(), send ? "send to" : "receive from", boot_.who(peer)));
    const std::uint64_t id = next_id_++;
    Message& m = messages_[id];
    m.user = user;
    m.host = host;
    m.len = len;
    m.chunks = len == 0 ? 1 : (len + cfg_.chunk_bytes - 1) / cfg_.chunk_bytes;
    lane->second.waiting.push_back(id);
    progress(lane->second);  // start the first copies or receives now
    return Request{id, peer, send, len};
  }

  void progress_all() {
    for (auto& [key, lane] : lanes_) progress(lane);
  }

  void progress(Lane& l) {
    try {
      if (l.send) {
        complete_sends(l);
        post_copied(l);
        start(l);
        post_copied(l);  // copies that finished at once (host memory)
      } else {
        complete_recvs(l);
        start(l);
      }
    } catch (const TimeoutError&) {
      throw;
    } catch (const InterruptedError&) {
      throw;
    } catch (const RunError& e) {
      throw RunError(fmt::format("{}: staged {} {} {}: {}", boot_.me(), inner_->name(),
                                 l.send ? "send to" : "receive from", boot_.who(l.peer), e.what()));
    }
  }

  // Begins chunks in lane order while their slots are free.
  void start(Lane& l) {
    while (!l.waiting.empty()) {
      Slot& s = l.slots[l.started % l.slots.size()];
      if (s.stage != Stage::idle) return;
      const std::uint64_t id = l.waiting.front();
      Message& m = messages_.at(id);
      s.msg = id;
      s.user_off = m.started * cfg_.chunk_bytes;
      s.len = std::min(cfg_.chunk_bytes, m.len - s.user_off);
      if (++m.started == m.chunks) l.waiting.pop_front();
      ++l.started;
      if (l.send) {
        s.has_copy = s.len > 0 && !m.host;
        if (s.has_copy)
          s.ticket = mem_.copy_async(pool_ + s.pool_off, m.user + s.user_off, s.len,
                                     MemoryOps::CopyDir::to_host);
        else if (s.len > 0)
          std::memcpy(pool_ + s.pool_off, m.user + s.user_off, s.len);
        s.stage = Stage::copy;
      } else {
        s.inner = inner_->post_recv(l.peer, *pool_region_, s.pool_off, s.len);
        s.stage = Stage::wire;
      }
    }
  }

  // Sends: hands copied chunks to the wire strictly in lane order.
  void post_copied(Lane& l) {
    while (l.posted < l.started) {
      Slot& s = l.slots[l.posted % l.slots.size()];
      if (s.has_copy && !mem_.copy_done(s.ticket)) return;
      s.has_copy = false;
      s.inner = inner_->post_send(l.peer, *pool_region_, s.pool_off, s.len);
      s.stage = Stage::wire;
      ++l.posted;
    }
  }

  void complete_sends(Lane& l) {
    for (Slot& s : l.slots)
      if (s.stage == Stage::wire && inner_->test(s.inner)) finish(s);
  }

  // Receives: a chunk off the wire goes up to the device; then the slot is free.
  void complete_recvs(Lane& l) {
    for (Slot& s : l.slots) {
      if (s.stage == Stage::wire && inner_->test(s.inner)) {
        Message& m = messages_.at(s.msg);
        s.has_copy = s.len > 0 && !m.host;
        if (s.has_copy)
          s.ticket = mem_.copy_async(m.user + s.user_off, pool_ + s.pool_off, s.len,
                                     MemoryOps::CopyDir::from_host);
        else if (s.len > 0)
          std::memcpy(m.user + s.user_off, pool_ + s.pool_off, s.len);
        s.stage = Stage::copy;
      }
      if (s.stage == Stage::copy && (!s.has_copy || mem_.copy_done(s.ticket))) {
        s.has_copy = false;
        finish(s);
      }
    }
  }

  void finish(Slot& s) {
    s.stage = Stage::idle;
    ++messages_.at(s.msg).finished;
  }

  std::unique_ptr<Transport> inner_;
  Bootstrap& boot_;
  MemoryOps& mem_;
  StagingConfig cfg_;
  std::byte* pool_ = nullptr;
  std::size_t pool_bytes_ = 0;
  std::unique_ptr<MemRegion> pool_region_;
  std::map<std::pair<int, bool>, Lane> lanes_;
  std::unordered_map<std::uint64_t, Message> messages_;
  std::uint64_t next_id_ = 1;
};

std::unique_ptr<Transport> staging_factory_fn(std::unique_ptr<Transport> inner, Bootstrap& boot,
                                              MemoryOps& mem, const Settings& settings) {
  if (std::string why = mem.unavailable_reason(); !why.empty())
    throw UsageError(fmt::format("-m {} --path staged: {}", mem_name(mem.kind()), why));
  if (!inner->supports(MemKind::host))
    throw UsageError(fmt::format("transport '{}' cannot move host memory, so it cannot be staged",
                                 inner->name()));
  return make_staged_transport(std::move(inner), boot, mem, settings.get<StagingConfig>());
}

// One pinned pool: 2 directions x slots x chunk per peer (at least a page).
std::size_t pool_bytes(std::size_t peers, const Settings& settings) {
  const StagingConfig& c = settings.get<StagingConfig>();
  return std::max<std::size_t>(2 * static_cast<std::size_t>(std::max(c.slots, 2)) * c.chunk_bytes * peers, 4096);
}

[[maybe_unused]] const bool g_installed =
    (staging_factory() = staging_factory_fn, staging_host_bytes() = pool_bytes, true);

}  // namespace

std::unique_ptr<Transport> make_staged_transport(std::unique_ptr<Transport> inner, Bootstrap& boot,
                                                 MemoryOps& mem, const StagingConfig& cfg) {
  return std::make_unique<StagedTransport>(std::move(inner), boot, mem, cfg);
}

}  // namespace gdr
