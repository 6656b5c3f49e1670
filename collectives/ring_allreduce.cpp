// Ring allreduce: reduce-scatter then allgather, each segment cut into
// chunks that flow through the ring independently, so while one chunk is
// being reduced the next is on the wire.
#include <fmt/format.h>

#include <algorithm>

#include "ring_schedule.h"
#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/core/signals.h"
#include "src/core/wait_loop.h"
#include "src/core/stats.h"
#include "test.h"
#include "timed_loop.h"

namespace gdr {
namespace {

class RingAllreduce final : public Test {
 public:
  void prepare(TestEnv& env, std::size_t max_bytes) override {
    const int n = env.boot.size();
    work_ = UniqueBuffer(&env.mem, max_bytes);
    // Two segments' worth: reduce-scatter steps alternate halves, so step
    // g+2 may land while step g+1 is still being reduced.
    seg_cap_ = (max_bytes / n + 64 + 63) / 64 * 64;
    scratch_ = UniqueBuffer(&env.mem, 2 * seg_cap_);
    rwork_ = env.transport->register_memory(work_.get());
    rscratch_ = env.transport->register_memory(scratch_.get());
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    return timed_allreduce_loop(env, c, work_.data(), [&] { allreduce(env, c); });
  }

 private:
  void allreduce(TestEnv& env, const CaseParams& c);

  UniqueBuffer work_, scratch_;
  std::unique_ptr<MemRegion> rwork_, rscratch_;
  std::size_t seg_cap_ = 0;
};

struct Pending {
  std::size_t idx;
  Request req;
};

struct Reducing {
  std::size_t idx;
  std::uint64_t ticket;
};

// One allreduce on the ring: 2(n-1) steps of K chunks each, operation
// g * K + k for chunk k of step g, every one a send and a receive. A send
// goes out once its data is final (the previous step's chunk is ready), a
// receive is posted once its target is free, and a reduce-scatter chunk is
// ready once it is reduced, in the background.
class RingPass {
 public:
  RingPass(TestEnv& env, const CaseParams& c, MemRegion& work, MemRegion& scratch, std::size_t seg_cap)
      : env_(env), c_(c), t_(*env.transport), work_(work), scratch_(scratch), seg_cap_(seg_cap),
        n_(env.boot.size()), r_(env.boot.rank()), right_((r_ + 1) % n_), left_((r_ + n_ - 1) % n_),
        ds_(dtype_size(c.dtype)),
        K_(ring::chunks_per_segment(
            c.count, n_,
            std::max<std::size_t>(ring::chunk_bytes(c.chunk_bytes, c.mem == MemKind::host, c.bytes, n_) / ds_, 1))),
        total_(static_cast<std::size_t>(ring::steps(n_)) * K_),
        send_done_(total_, 0), ready_(total_, 0) {}

  void run() {
    WaitLoop loop(env_.boot.timeout(), 1);  // bounds a stall: restarts on progress
    while (finished_ < 2 * total_) {
      post_sends();
      post_recvs();
      // All three, in this order, every round.
      bool sent = complete_sends();
      bool received = complete_recvs();
      bool reduced = complete_reduces();
      if (sent || received || reduced) loop.progressed();
      else if (loop.tick() && loop.expired()) timed_out();
    }
  }

 private:
  ring::Range range_of(int seg, std::size_t k) const {
    return ring::chunk(ring::segment(c_.count, n_, seg), K_, k);
  }
  // Where a reduce-scatter chunk lands: reduce-scatter steps alternate
  // halves of the scratch, so step g+2 may land while g+1 is reduced.
  std::size_t scratch_off(int g, int seg, ring::Range ch) const {
    return (g % 2) * seg_cap_ + (ch.offset - ring::segment(c_.count, n_, seg).offset) * ds_;
  }

  // Sends go out in (step, chunk) order once their data is final.
  void post_sends() {
    while (next_send_ < total_) {
      int g = static_cast<int>(next_send_ / K_);
      std::size_t k = next_send_ % K_;
      if (g > 0 && !ready_[(g - 1) * K_ + k]) break;
      ring::Range ch = range_of(ring::send_segment(r_, n_, g), k);
      if (ch.count == 0) { send_done_[next_send_] = 1; ++finished_; }
      else sends_.push_back({next_send_, t_.post_send(right_, work_, ch.offset * ds_, ch.count * ds_)});
      ++next_send_;
    }
  }

  // Receives are posted in the same order, once their target is free.
  void post_recvs() {
    while (next_recv_ < total_) {
      int g = static_cast<int>(next_recv_ / K_);
      std::size_t k = next_recv_ % K_;
      bool reduce_step = ring::is_reduce_step(g, n_);
      if (reduce_step && g >= 2 && !ready_[(g - 2) * K_ + k]) break;
      if (!reduce_step && !send_done_[(g - (n_ - 1)) * K_ + k]) break;
      int seg = ring::recv_segment(r_, n_, g);
      ring::Range ch = range_of(seg, k);
      if (ch.count == 0) { ready_[next_recv_] = 1; ++finished_; }
      else if (reduce_step)
        recvs_.push_back({next_recv_, t_.post_recv(left_, scratch_, scratch_off(g, seg, ch), ch.count * ds_)});
      else
        recvs_.push_back({next_recv_, t_.post_recv(left_, work_, ch.offset * ds_, ch.count * ds_)});
      ++next_recv_;
    }
  }

  bool complete_sends() {
    bool progressed = false;
    std::erase_if(sends_, [&](const Pending& p) {
      if (!t_.test(p.req)) return false;
      send_done_[p.idx] = 1;
      ++finished_;
      return progressed = true;
    });
    return progressed;
  }

  bool complete_recvs() {
    bool progressed = false;
    std::erase_if(recvs_, [&](const Pending& p) {
      if (!t_.test(p.req)) return false;
      int g = static_cast<int>(p.idx / K_);
      if (ring::is_reduce_step(g, n_)) {
        // Reduce in the background; the chunk is ready once that finishes.
        int seg = ring::recv_segment(r_, n_, g);
        ring::Range ch = range_of(seg, p.idx % K_);
        reduces_.push_back({p.idx, env_.mem.reduce_async(work_.at(ch.offset * ds_),
                                                         scratch_.at(scratch_off(g, seg, ch)),
                                                         ch.count, c_.dtype, c_.op)});
        return progressed = true;
      }
      ready_[p.idx] = 1;
      ++finished_;
      return progressed = true;
    });
    return progressed;
  }

  bool complete_reduces() {
    bool progressed = false;
    std::erase_if(reduces_, [&](const Reducing& p) {
      if (!env_.mem.reduce_done(p.ticket)) return false;
      ready_[p.idx] = 1;
      ++finished_;
      return progressed = true;
    });
    return progressed;
  }

  [[noreturn]] void timed_out() const {
    throw TimeoutError(fmt::format(
        "{}: timed out after {:g} s in {} waiting for {} (from left) / {} (to right); {} of {} "
        "ring operations done; roll call: {}",
        env_.boot.me(), env_.boot.timeout(), activity(), env_.boot.who(left_), env_.boot.who(right_),
        finished_, 2 * total_, env_.boot.roll_call()));
  }

  TestEnv& env_;
  const CaseParams& c_;
  Transport& t_;
  MemRegion& work_;
  MemRegion& scratch_;
  const std::size_t seg_cap_;
  const int n_, r_, right_, left_;
  const std::size_t ds_, K_, total_;
  std::vector<char> send_done_, ready_;
  std::vector<Pending> sends_, recvs_;
  std::vector<Reducing> reduces_;
  std::size_t next_send_ = 0, next_recv_ = 0, finished_ = 0;
};

void RingAllreduce::allreduce(TestEnv& env, const CaseParams& c) {
  if (env.boot.size() == 1) return;
  RingPass(env, c, *rwork_, *rscratch_, seg_cap_).run();
}

GDR_REGISTER_TEST(reg_allreduce,
                  {.name = "allreduce",
                   .traits = {.kind = TestKind::collective, .chunk = "the ring's pipeline chunk, bytes"},
                   .create = [] { return std::make_unique<RingAllreduce>(); },
                   .busbw_factor = allreduce_busbw_factor,  // one definition, src/core/stats.h
                   .footprint = [](const FootprintArgs& a) {  // work + two segments of scratch (prepare)
                     const std::size_t max = a.max_bytes;
                     return Footprint{{max, 2 * ((max / std::max(a.ranks, 1) + 127) / 64 * 64)}, 0};
                   },
                   // OSU's collective counts: 1000 iterations, 200 skipped up to
                   // 8 KiB; 100 and 10 above.
                   .auto_iters = [](std::size_t bytes) { return bytes <= 8192 ? IterCounts{1000, 200} : IterCounts{100, 10}; },
                   // The chunk the ring will use, recorded with the case.
                   .complete = [](CaseParams& c, std::size_t, int n) {
                     c.chunk_bytes = ring::chunk_bytes(c.chunk_bytes, c.mem == MemKind::host, c.bytes, n);
                   }});

}  // namespace
}  // namespace gdr
