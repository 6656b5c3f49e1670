// Point-to-point tests between one pair of ranks at a time, in OSU's shapes:
//  latency: ping-pong; one iteration = one round trip, timed by the
//           initiator, recorded as round trip / 2 (the responder sits out:
//           NaN). Up to 64 round trips run back to back after one barrier
//           and one untimed round trip (timed_pair_loop's batch and lead).
//  bw:      one iteration = `window` messages one way, then a 4-byte ack;
//           time per message = iteration time / window.
//  bibw:    both directions at once, `window` messages each way.
// Every message carries a pattern of its sender, iteration and slot
// (src/memory/payload_pattern.h); the receiver verifies every byte of every slot of a
// checked batch, in one kernel per batch for device memory: the batch after
// the timed ones (--check after), or every timed batch too (--check every).
// Message w lands in slot w mod slots of the receive buffer; --slots auto
// keeps the slots of one buffer within 4 MiB, 1 MiB on host memory (see complete_slots).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/bootstrap.h"
#include "patterns.h"
#include "src/memory/payload_pattern.h"
#include "test.h"
#include "timed_loop.h"

namespace gdr {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kLatencyBatch = 64;                  // round trips per barrier
constexpr std::size_t kSlotBytes = 64u << 20;      // room for distinct slots per buffer (--slots N)
constexpr std::size_t kAutoSlotBytes = 4u << 20;   // --slots auto's most per buffer: device memory
constexpr std::size_t kAutoSlotBytesHost = 1u << 20;  // host memory
constexpr std::size_t kAckBytes = 64;
constexpr std::size_t kLeadBytes = 1u << 20;       // bw, bibw: the lead message's most

// Bytes of each of the send and receive buffers for messages up to `max`:
// room for 64 slots of the largest message, within kSlotBytes.
std::size_t slot_buffer_bytes(std::size_t max) {
  return std::max(max, std::min<std::size_t>(64 * max, kSlotBytes));
}

// The slots a case uses, at most one per message of a window or round trip
// of a batch: --slots N as far as the buffers hold them; auto, as many as
// fit in kAutoSlotBytes. Why that bound: the peers (osu_bw, ucx_perftest,
// ib_write_bw) reuse one buffer, which a GPU's L2 (50 MB on an H100/H200)
// holds up to a few MiB; 64 distinct 4-16 MiB slots are read from HBM
// instead, measured on the H200 at 0.75-0.85 of ucx_perftest's tag_bw where
// one buffer matched it. Under CUDA MPS both ranks' buffers share one L2 at
// once, and 16 MiB a buffer still cost 1-4 MiB ~10 % against one slot
// (results/archive/20261204_h200_ucx122-mps-slots-cap-window-probe.txt).
// Within 4 MiB per buffer a window still holds up to 64 distinct messages
// (up to 64 KiB; 16 at 256 KiB, 4 at 1 MiB, 1 from 4 MiB).
// Host memory keeps 1 MiB a buffer: a CPU's per-core L2 holds 1-2 MiB, and on
// the H200's host `-T mpi` bw at 1 MiB read 0.84 of osu_bw's loop with 4 slots
// and 0.96 with one, in each of 4 ABBA rounds
// (results/archive/20261206_h200_mpi-host-probe-3450f6a.txt).
void complete_slots(CaseParams& c, std::size_t max, int) {
  if (!c.pattern.empty()) {  // a concurrent pattern's flows: their regions' slots
    c.slots = patterns::slots(c, max);
    return;
  }
  const std::size_t bytes = std::max<std::size_t>(c.bytes, 1);
  const std::size_t fit = std::max<std::size_t>(1, slot_buffer_bytes(max) / bytes);
  const std::size_t most = c.traits.kind == TestKind::latency ? kLatencyBatch : static_cast<std::size_t>(c.window);
  const std::size_t room = c.mem == MemKind::host ? kAutoSlotBytesHost : kAutoSlotBytes;
  const std::size_t want = c.slots > 0 ? static_cast<std::size_t>(c.slots) : std::max<std::size_t>(1, room / bytes);
  c.slots = static_cast<int>(std::min({want, fit, most}));
}

class PointToPoint final : public Test {
 public:
  explicit PointToPoint(const TestTraits& t)
      : latency_(t.kind == TestKind::latency), both_ways_(t.directions == 2) {}

  void prepare(TestEnv& env, std::size_t max_bytes) override {
    cap_ = slot_buffer_bytes(max_bytes);
    send_ = UniqueBuffer(&env.mem, cap_);
    recv_ = UniqueBuffer(&env.mem, cap_);
    // The bw acknowledgement carries no data: host memory, so that neither rank
    // touches the GPU for it inside the timed window (a 4 B device message goes
    // through a host buffer with a copy on each side; without CUDA MPS each copy
    // waited for a GPU context switch, and UCX 1.22, whose sender does the
    // rendezvous copies, lost 20-40 % of device bw to it on an H200).
    ack_ = UniqueBuffer(memory_ops(MemKind::host), kAckBytes);
    lead_ = UniqueBuffer(&env.mem, std::min(max_bytes, kLeadBytes));
    // Every slot carries a pattern.
    seed_and_register(env, send_, cap_, {{send_, rsend_}, {recv_, rrecv_}, {ack_, rack_}, {lead_, rlead_}});
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    slots_ = std::max(1, c.slots);
    corrupted_ = false;
    if (static_cast<std::size_t>(slots_) * c.bytes > cap_)
      throw RunError(fmt::format("{}: {} slots of {} B exceed the {} B buffers", env.boot.me(), slots_, c.bytes, cap_));
    PairHooks h;
    // Latency: a batch of round trips, k in slot k mod slots_; bw, bibw: one
    // window per barrier. Each batch starts with an untimed lead exchange.
    h.batch = latency_ ? kLatencyBatch : 1;
    h.before = [&](const PairRole& r, int first, int n, bool checked) { before(env, c, r, first, n, checked); };
    h.check_count = h.batch;  // latency: one batch of round trips; bw, bibw: one window
    h.lead = [&](const PairRole& r) { latency_ ? lead(env, c, r) : lead_message(env, c, r); };
    h.once = [&](const PairRole& r, int it) { return once(env, c, r, it); };
    h.after = [&](const PairRole& r, int first, int n) { return after(env, c, r, first, n); };
    return timed_pair_loop(env, c, h);
  }

 private:
  std::size_t at(int slot, const CaseParams& c) const { return static_cast<std::size_t>(slot) * c.bytes; }
  // Slots in use in a batch of n iterations (bw, bibw: n is 1, the window
  // fills them all; latency: round trip k uses slot k mod slots_).
  int used(int n) const { return latency_ ? std::min(slots_, n) : slots_; }
  // The seed of what `sender` has in `slot` once the batch starting at
  // iteration `first` is through: bw and bibw, per iteration and slot;
  // latency, per round trip (the batch's last round trip in that slot).
  std::uint64_t seed(const CaseParams& c, int sender, int first, int n, int slot) const {
    const int it = latency_ ? first + slot + (n - 1 - slot) / slots_ * slots_ : first;
    return pattern::seed(sender, static_cast<std::uint64_t>(it + c.warmup), latency_ ? 0 : slot);
  }
  // The seeds of the slots the batch uses, slot 0 first.
  const std::vector<std::uint64_t>& seeds(const CaseParams& c, int sender, int first, int n) {
    seeds_.clear();
    for (int s = 0; s < used(n); ++s) seeds_.push_back(seed(c, sender, first, n, s));
    return seeds_;
  }
  // bw: the initiator sends, the responder receives; latency and bibw: both do both.
  bool sends(const PairRole& r) const { return latency_ || both_ways_ || r.initiator; }
  bool receives(const PairRole& r) const { return latency_ || both_ways_ || !r.initiator; }

  // Timed iterations get fresh patterns; the latency test pre-posts the
  // batch's receives (one more for the lead round trip) before the barrier,
  // as a real application would have them waiting: a transport whose sender
  // needs the receiver's buffer first (verbs) then pays no extra hop. A
  // transport that pays for them (mpi) posts each in round_trip() instead.
  void before(TestEnv& env, const CaseParams& c, const PairRole& r, int first, int n, bool checked) {
    if (checked && sends(r)) {
      env.mem.fill_patterns(send_.data(), c.bytes, seeds(c, env.boot.rank(), first, n));
      env.mem.sync();
    }
    first_ = first;
    pre_.clear();
    if (!latency_ || !env.transport->latency_preposts_receives()) return;
    Transport& t = *env.transport;
    pre_.push_back(t.post_recv(r.peer, *rrecv_, 0, c.bytes));  // the lead round trip's
    for (int k = 0; k < n; ++k) pre_.push_back(t.post_recv(r.peer, *rrecv_, at(k % slots_, c), c.bytes));
  }

  // One untimed round trip of slot 0's message (round trip 0 overwrites it).
  void lead(TestEnv& env, const CaseParams& c, const PairRole& r) {
    round_trip(env, r, 0, 0, c.bytes);
  }

  // One ping-pong: the initiator sends then receives, the responder mirrors it;
  // receive `k` of the batch is pre-posted (pre_[k]) or posted when osu_latency does.
  void round_trip(TestEnv& env, const PairRole& r, std::size_t k, std::size_t off, std::size_t len) {
    Transport& t = *env.transport;
    auto recv = [&] { return pre_.empty() ? t.post_recv(r.peer, *rrecv_, off, len) : pre_[k]; };
    if (r.initiator && !pre_.empty()) {
      Request both[2] = {t.post_send(r.peer, *rsend_, off, len), pre_[k]};
      wait_all(t, both, env.boot);
    } else if (r.initiator) {
      wait_one(t, t.post_send(r.peer, *rsend_, off, len), env.boot);
      wait_one(t, recv(), env.boot);
    } else {
      wait_one(t, recv(), env.boot);
      wait_one(t, t.post_send(r.peer, *rsend_, off, len), env.boot);
    }
  }

  // bw, bibw: one untimed message (at most kLeadBytes) one way or both ways,
  // into a buffer of its own, so it cannot stand in for a lost timed one.
  void lead_message(TestEnv& env, const CaseParams& c, const PairRole& r) {
    Transport& t = *env.transport;
    const std::size_t len = std::min(c.bytes, kLeadBytes);
    std::vector<Request> reqs;
    if (receives(r)) reqs.push_back(t.post_recv(r.peer, *rlead_, 0, len));
    if (sends(r)) reqs.push_back(t.post_send(r.peer, *rsend_, 0, len));
    wait_all(t, reqs, env.boot);
  }

  double once(TestEnv& env, const CaseParams& c, const PairRole& r, int it) {
    Transport& t = *env.transport;
    const std::size_t len = c.bytes;
    std::vector<Request>& reqs = reqs_;  // kept: no allocation inside the timed region
    reqs.clear();
    reqs.reserve(2 * static_cast<std::size_t>(c.window) + 1);
    // The latency responder times nothing: no clock read on its side of the
    // round trip (2.8 us a read where the clock is HPET: a qemu guest).
    const double t0 = latency_ && !r.initiator ? 0.0 : now_seconds();
    if (latency_) {
      const int k = it - first_;
      round_trip(env, r, static_cast<std::size_t>(k) + 1, at(k % slots_, c), len);
      return r.initiator ? (now_seconds() - t0) / 2 : kNaN;
    }
    if (both_ways_) {  // bibw, as osu_bibw: the whole window of receives, then of sends
      for (int w = 0; w < c.window; ++w) reqs.push_back(t.post_recv(r.peer, *rrecv_, at(w % slots_, c), len));
      for (int w = 0; w < c.window; ++w) reqs.push_back(t.post_send(r.peer, *rsend_, at(w % slots_, c), len));
      wait_all(t, reqs, env.boot);
    } else if (r.initiator) {  // bw: a window one way, then the 4-byte ack
      for (int w = 0; w < c.window; ++w) reqs.push_back(t.post_send(r.peer, *rsend_, at(w % slots_, c), len));
      reqs.push_back(t.post_recv(r.peer, *rack_, 0, 4));
      wait_all(t, reqs, env.boot);
    } else {
      for (int w = 0; w < c.window; ++w) reqs.push_back(t.post_recv(r.peer, *rrecv_, at(w % slots_, c), len));
      wait_all(t, reqs, env.boot);
      wait_one(t, t.post_send(r.peer, *rack_, 0, 4), env.boot);
    }
    return (now_seconds() - t0) / c.window;
  }

  // Every slot that received something in this batch against the pattern
  // its sender wrote (a slot written twice holds the same message twice).
  std::uint64_t after(TestEnv& env, const CaseParams& c, const PairRole& r, int first, int n) {
    if (!receives(r)) return 0;
    if (!corrupted_ && selftest_corrupt(env) && env.boot.rank() == c.dst) flip_first_byte(env);
    corrupted_ = true;
    return env.mem.count_wrong_patterns(recv_.data(), c.bytes, seeds(c, r.peer, first, n));
  }

  void flip_first_byte(TestEnv& env) {
    unsigned char b = 0;
    env.mem.to_host(&b, recv_.data(), 1);
    b = static_cast<unsigned char>(~b);
    env.mem.from_host(recv_.data(), &b, 1);
  }

  bool latency_, both_ways_;
  std::size_t cap_ = 0;
  int slots_ = 1, first_ = 0;
  bool corrupted_ = false;  // GDR_SELFTEST_CORRUPT: the first checked batch of each case only
  std::vector<Request> pre_;   // latency: the batch's pre-posted receives
  std::vector<Request> reqs_;  // bw, bibw: the window's requests
  std::vector<std::uint64_t> seeds_;
  UniqueBuffer send_, recv_, ack_, lead_;
  std::unique_ptr<MemRegion> rsend_, rrecv_, rack_, rlead_;
};

// The send and receive buffers (slot_buffer_bytes), the ack and the lead's.
// A concurrent pattern's: collectives/patterns.h.
Footprint p2p_footprint(const FootprintArgs& a) {
  if (!a.pattern.empty()) return patterns::footprint(a.traits, a.pattern, a.max_bytes, a.layout, a.rank);
  const std::size_t max = a.max_bytes;
  return Footprint{{slot_buffer_bytes(max), slot_buffer_bytes(max), std::min(max, kLeadBytes)}, kAckBytes};
}

// OSU's counts (osu_util.h): latency 10000 iterations and 100 skipped up to
// 8 KiB, 1000 and 10 above; bandwidth 100 and 10, then 20 and 2.
IterCounts latency_iters(std::size_t bytes) { return bytes <= 8192 ? IterCounts{10000, 100} : IterCounts{1000, 10}; }
IterCounts bw_iters(std::size_t bytes) { return bytes <= 8192 ? IterCounts{100, 10} : IterCounts{20, 2}; }

constexpr std::string_view kWindow = "messages in flight per iteration";
constexpr std::string_view kWindowEach = "messages in flight per iteration, each way";
constexpr TestTraits kLatency{.kind = TestKind::latency};
constexpr TestTraits kBw{.kind = TestKind::bandwidth, .window = kWindow};
constexpr TestTraits kBibw{.kind = TestKind::bandwidth, .directions = 2, .window = kWindowEach};

// A test of these traits: one pair at a time, or over a concurrent pattern.
template <const TestTraits& T>
TestInfo p2p_test(std::string name, IterCounts (*iters)(std::size_t)) {
  return {.name = std::move(name), .traits = T, .create = [] { return std::make_unique<PointToPoint>(T); },
          .footprint = p2p_footprint, .auto_iters = iters, .complete = complete_slots,
          .create_on_pattern = [](std::string_view p, const patterns::Layout& at) { return patterns::make_test(T, p, at); }};
}

static TestRegistrar reg_latency{p2p_test<kLatency>("latency", latency_iters)};
static TestRegistrar reg_bw{p2p_test<kBw>("bw", bw_iters)};
static TestRegistrar reg_bibw{p2p_test<kBibw>("bibw", bw_iters)};

}  // namespace
}  // namespace gdr
