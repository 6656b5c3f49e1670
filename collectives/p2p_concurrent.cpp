// latency, bw and bibw over a concurrent pattern (patterns.h): every flow of
// a step runs at once, and every rank records its own time per iteration.
//  latency: each initiator runs round trips with its responder; a batch of
//           up to 64 timed round trips (plus one untimed lead round trip)
//           follows one barrier, receives pre-posted. A rank's time of round
//           trip k is the slowest of its own flows' (round trip / 2);
//           responders record NaN.
//  bw:      receives pre-posted, one barrier, then every sender posts a
//           window of messages per flow; a receiver acknowledges (4 B) each
//           flow as soon as its window has arrived. A rank's time: from the
//           barrier's exit until all it sent was acknowledged and all it
//           expected arrived, divided by the window (time per message).
//  bibw:    as bw without acks, both directions of each pair at once.
// Every message carries its sender's pattern; each incoming flow lands in its
// own region of the receive buffer, and every byte of every slot of a checked
// batch (--check after: the one after the timed ones) is verified, untimed.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <optional>
#include <chrono>
#include <thread>

#include "patterns.h"
#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/memory/payload_pattern.h"
#include "src/core/signals.h"
#include "timed_loop.h"

namespace gdr::patterns {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kAckBytes = 64;
constexpr int kLatencyBatch = 64;

// One end of a flow on this rank.
struct End {
  int peer = -1;
  bool sender = false;  // sender (bw, bibw) or initiator (latency)
  int region = -1;      // receive region, where this end receives
  int ack = -1;         // bw senders: where their ack lands
};

// Regions this rank receives into in one step: latency, both ends of every
// flow it is in (pings or replies); bandwidth, the flows it receives.
int regions_in_step(const TestTraits& k, const std::vector<Flow>& fl, int me) {
  int n = 0;
  for (auto [a, b] : fl) n += k.kind == TestKind::latency ? (a == me || b == me) : b == me;
  return n;
}

int most_regions(const TestTraits& k, std::string_view pattern, const Layout& at, int me) {
  int most = 1;
  for (int s = 0; s < steps(pattern, k.directions, at); ++s)
    most = std::max(most, regions_in_step(k, flows(pattern, k.directions, at, s), me));
  return most;
}

// More ranks on this node than cores: a rank that spins keeps its peer off
// the CPU for a whole time slice (milliseconds), so waits yield instead.
// GDR_WAIT_YIELD=1|0 says so where the rank cannot see it: emulated hosts
// (jobs/cluster) are one rank each but share the machine's cores.
bool oversubscribed(const TestEnv& env) {
  if (auto y = env.settings.get<CollectiveSettings>().wait_yield) return *y == 1;
  return env.boot.local_size() > static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

class Concurrent final : public Test {
 public:
  Concurrent(const TestTraits& k, std::string pattern, Layout at)
      : traits_(k), latency_(k.kind == TestKind::latency), acked_(!latency_ && k.directions == 1),
        pattern_(std::move(pattern)), at_(std::move(at)) {}

  void prepare(TestEnv& env, std::size_t max) override {
    const int me = env.boot.rank();
    region_ = region_bytes(max);
    regions_ = most_regions(traits_, pattern_, at_, me);
    acks_ = std::max(1, max_out(pattern_, traits_.directions, at_, me));
    send_ = UniqueBuffer(&env.mem, region_);
    recv_ = UniqueBuffer(&env.mem, region_ * regions_);
    // Acknowledgements in host memory: no GPU work inside a timed window (p2p.cpp).
    ack_send_ = UniqueBuffer(memory_ops(MemKind::host), kAckBytes);
    ack_recv_ = UniqueBuffer(memory_ops(MemKind::host), kAckBytes * acks_);
    seed_and_register(env, send_, region_,
                      {{send_, rsend_}, {recv_, rrecv_}, {ack_send_, rack_send_}, {ack_recv_, rack_recv_}});
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    const int me = env.boot.rank();
    slots_ = std::max(1, c.slots);
    if (static_cast<std::size_t>(slots_) * c.bytes > region_)
      throw RunError(fmt::format("{}: {} slots of {} B exceed the {} B flow region", env.boot.me(), slots_,
                                 c.bytes, region_));
    ends_.clear();
    int region = 0, ack = 0;
    for (auto [a, b] : c.flows) {
      if (a != me && b != me) continue;
      End e{a == me ? b : a, a == me};
      if (latency_ || !e.sender) e.region = region++;
      if (acked_ && e.sender) e.ack = ack++;
      ends_.push_back(e);
    }
    if (region > regions_ || ack > acks_)
      throw RunError(fmt::format("{}: step {} of pattern {} needs {} receive regions, {} prepared", env.boot.me(),
                                 c.step, c.pattern, region, regions_));
    CaseOutcome out;
    const int batch = latency_ ? kLatencyBatch : 1;
    bool corrupted = false;
    auto phase = [&](int first, int count, bool timed, bool checked) {
      for (int done = 0; done < count;) {
        const int it = first + done, n = std::min(batch, count - done);
        before(env, c, it, n, checked);
        env.transport->start_posted();  // untimed: the receives' clear-to-sends leave before the barrier
        env.boot.barrier();
        std::vector<double> t = latency_ ? round_trips(env, c, n) : std::vector<double>{window(env, c)};
        if (timed) out.times.insert(out.times.end(), t.begin(), t.end());
        if (checked) {
          if (!corrupted && selftest_corrupt(env)) corrupt(env);
          corrupted = true;
          out.wrong += after(env, c, it, latency_ ? n + 1 : c.window);
          out.checked += n;
        }
        done += n;
      }
    };
    warm_then_timed(env, c, out, phase, batch);
    return out;
  }

 private:
  std::size_t slot_at(int region, int slot, const CaseParams& c) const {
    return static_cast<std::size_t>(region) * region_ + static_cast<std::size_t>(slot) * c.bytes;
  }
  std::uint64_t seed(int sender, int first, int slot, const CaseParams& c) const {
    return pattern::seed(sender, static_cast<std::uint64_t>(first + c.warmup), static_cast<std::uint64_t>(slot));
  }
  bool sends_data() const {
    for (auto& e : ends_)
      if (e.sender || latency_) return true;
    return false;
  }

  // Untimed: fresh patterns in the send slots, receives pre-posted.
  void before(TestEnv& env, const CaseParams& c, int first, int n, bool checked) {
    Transport& t = *env.transport;
    if (checked && sends_data()) {
      for (int s = 0; s < slots_; ++s)
        env.mem.fill_pattern(static_cast<std::byte*>(send_.data()) + slot_at(0, s, c), c.bytes,
                             seed(env.boot.rank(), first, s, c));
      env.mem.sync();
    }
    reqs_.clear();
    done_.clear();
    tags_.clear();
    const int per = latency_ ? n + 1 : c.window;  // exactly what will arrive
    for (std::size_t e = 0; e < ends_.size(); ++e) {
      const End& end = ends_[e];
      if (end.region >= 0)  // receives: per round trip (the lead's first) or per window slot
        for (int j = 0; j < per; ++j) add(t.post_recv(end.peer, *rrecv_, slot_at(end.region, j % slots_, c), c.bytes), e, j);
    }
    for (std::size_t e = 0; e < ends_.size(); ++e)  // after the data receives: acks come last per peer
      if (ends_[e].ack >= 0) add(t.post_recv(ends_[e].peer, *rack_recv_, ends_[e].ack * kAckBytes, 4), e, -1);
  }

  void add(Request r, std::size_t end, int j) {
    reqs_.push_back(r);
    done_.push_back(0);
    tags_.push_back({static_cast<int>(end), j});
  }

  // bw, bibw: one window per flow; this rank's seconds per message.
  double window(TestEnv& env, const CaseParams& c) {
    Transport& t = *env.transport;
    std::vector<int> arrived(ends_.size(), 0);
    const double t0 = now_seconds();
    const CollectiveSettings& cs = env.settings.get<CollectiveSettings>();
    if (cs.selftest_slow_rank == env.boot.rank() && !ends_.empty())  // self-test: a slow end (test.h)
      std::this_thread::sleep_for(std::chrono::microseconds(cs.selftest_slow_us));
    for (std::size_t e = 0; e < ends_.size(); ++e)
      if (ends_[e].sender)
        for (int w = 0; w < c.window; ++w) add(t.post_send(ends_[e].peer, *rsend_, slot_at(0, w % slots_, c), c.bytes), e, w);
    if (ends_.empty()) return kNaN;
    wait_all(t, reqs_, done_, env.boot, [&](std::size_t i) {
      const auto [e, j] = tags_[i];
      // A receiver acknowledges a flow as soon as its whole window arrived.
      if (acked_ && !reqs_[i].is_send && j >= 0 && ++arrived[e] == c.window)
        add(t.post_send(ends_[e].peer, *rack_send_, 0, 4), e, -1);
    }, oversubscribed(env));
    return (now_seconds() - t0) / c.window;
  }

  // latency: n timed round trips per initiator end, after one lead round
  // trip; this rank's one-way time per round trip, NaN if it initiates none.
  std::vector<double> round_trips(TestEnv& env, const CaseParams& c, int n) {
    Transport& t = *env.transport;
    const std::size_t ne = ends_.size();
    std::vector<double> start(ne, 0.0);
    std::vector<std::vector<int>> parts(ne, std::vector<int>(n + 1, 0));  // initiator: send + reply done
    std::vector<double> times(n, kNaN);
    auto ping = [&](std::size_t e, int j) {
      start[e] = now_seconds();
      add(t.post_send(ends_[e].peer, *rsend_, slot_at(0, j % slots_, c), c.bytes), e, j);
    };
    for (std::size_t e = 0; e < ne; ++e)
      if (ends_[e].sender) ping(e, 0);
    wait_all(t, reqs_, done_, env.boot, [&](std::size_t i) {
      const auto [e, j] = tags_[i];
      if (!ends_[e].sender) {  // responder: answer ping j
        if (!reqs_[i].is_send) add(t.post_send(ends_[e].peer, *rsend_, slot_at(0, j % slots_, c), c.bytes), e, j);
        return;
      }
      if (j > n || ++parts[e][j] < 2) return;  // a pre-posted receive beyond this batch's round trips
      const double now = now_seconds();
      if (j > 0) times[j - 1] = std::isnan(times[j - 1]) ? (now - start[e]) / 2 : std::max(times[j - 1], (now - start[e]) / 2);
      if (j < n) ping(e, j + 1);
    }, oversubscribed(env));
    return times;
  }

  // Every slot of every region that received in this batch against its
  // sender's pattern (a slot written twice holds the same message twice).
  std::uint64_t after(TestEnv& env, const CaseParams& c, int first, int messages) {
    std::uint64_t wrong = 0;
    for (auto& e : ends_) {
      if (e.region < 0) continue;
      for (int s = 0; s < std::min(slots_, messages); ++s)
        wrong += env.mem.count_wrong_pattern(static_cast<std::byte*>(recv_.data()) + slot_at(e.region, s, c), c.bytes,
                                             seed(e.peer, first, s, c));
    }
    return wrong;
  }

  void corrupt(TestEnv& env) {
    for (auto& e : ends_) {
      if (e.region < 0) continue;
      unsigned char b = 0;
      std::byte* p = static_cast<std::byte*>(recv_.data()) + static_cast<std::size_t>(e.region) * region_;
      env.mem.to_host(&b, p, 1);
      b = static_cast<unsigned char>(~b);
      env.mem.from_host(p, &b, 1);
      return;
    }
  }

  TestTraits traits_;
  bool latency_;
  bool acked_;  // bw: a receiver acknowledges each flow's window
  std::string pattern_;
  Layout at_;
  std::size_t region_ = 0;
  int regions_ = 1, acks_ = 1, slots_ = 1;
  std::vector<End> ends_;
  std::vector<Request> reqs_;
  std::vector<char> done_;
  std::vector<std::pair<int, int>> tags_;  // (end, message or round trip; -1 an ack)
  UniqueBuffer send_, recv_, ack_send_, ack_recv_;
  std::unique_ptr<MemRegion> rsend_, rrecv_, rack_send_, rack_recv_;
};

}  // namespace

std::unique_ptr<Test> make_test(const TestTraits& test, std::string_view pattern, const Layout& at) {
  return std::make_unique<Concurrent>(test, std::string(pattern), at);
}

Footprint footprint(const TestTraits& test, std::string_view pattern, std::size_t max, const Layout& at, int me) {
  const std::size_t region = region_bytes(max);
  const int regions = most_regions(test, pattern, at, me);
  const int acks = std::max(1, max_out(pattern, test.directions, at, me));
  return Footprint{{region, region * regions}, kAckBytes + kAckBytes * acks};
}

}  // namespace gdr::patterns
