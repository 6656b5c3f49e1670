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

void RingAllreduce::allreduce(TestEnv& env, const CaseParams& c) {
  const int n = env.boot.size(), r = env.boot.rank();
  if (n == 1) return;
  Transport& t = *env.transport;
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const std::size_t ds = dtype_size(c.dtype);
  const std::size_t K = ring::chunks_per_segment(c.count, n, std::max<std::size_t>(ring::chunk_bytes(c.chunk_bytes, c.mem == MemKind::host, c.bytes, n) / ds, 1));
  const std::size_t total = static_cast<std::size_t>(ring::steps(n)) * K;

  auto range_of = [&](int seg, std::size_t k) {
    return ring::chunk(ring::segment(c.count, n, seg), K, k);
  };
  auto scratch_off = [&](int g, int seg, ring::Range ch) {
    return (g % 2) * seg_cap_ + (ch.offset - ring::segment(c.count, n, seg).offset) * ds;
  };

  std::vector<char> send_done(total, 0), ready(total, 0);
  std::vector<Pending> sends, recvs;
  std::vector<Reducing> reduces;
  std::size_t next_send = 0, next_recv = 0, finished = 0;
  WaitLoop loop(env.boot.timeout(), 1);  // bounds a stall: restarts on progress

  while (finished < 2 * total) {
    // Sends go out in (step, chunk) order once their data is final.
    while (next_send < total) {
      int g = static_cast<int>(next_send / K);
      std::size_t k = next_send % K;
      if (g > 0 && !ready[(g - 1) * K + k]) break;
      ring::Range ch = range_of(ring::send_segment(r, n, g), k);
      if (ch.count == 0) { send_done[next_send] = 1; ++finished; }
      else sends.push_back({next_send, t.post_send(right, *rwork_, ch.offset * ds, ch.count * ds)});
      ++next_send;
    }
    // Receives are posted in the same order, once their target is free.
    while (next_recv < total) {
      int g = static_cast<int>(next_recv / K);
      std::size_t k = next_recv % K;
      bool reduce_step = ring::is_reduce_step(g, n);
      if (reduce_step && g >= 2 && !ready[(g - 2) * K + k]) break;
      if (!reduce_step && !send_done[(g - (n - 1)) * K + k]) break;
      int seg = ring::recv_segment(r, n, g);
      ring::Range ch = range_of(seg, k);
      if (ch.count == 0) { ready[next_recv] = 1; ++finished; }
      else if (reduce_step)
        recvs.push_back({next_recv, t.post_recv(left, *rscratch_, scratch_off(g, seg, ch), ch.count * ds)});
      else
        recvs.push_back({next_recv, t.post_recv(left, *rwork_, ch.offset * ds, ch.count * ds)});
      ++next_recv;
    }
    bool progressed = false;
    std::erase_if(sends, [&](const Pending& p) {
      if (!t.test(p.req)) return false;
      send_done[p.idx] = 1;
      ++finished;
      return progressed = true;
    });
    std::erase_if(recvs, [&](const Pending& p) {
      if (!t.test(p.req)) return false;
      int g = static_cast<int>(p.idx / K);
      if (ring::is_reduce_step(g, n)) {
        // Reduce in the background; the chunk is ready once that finishes.
        int seg = ring::recv_segment(r, n, g);
        ring::Range ch = range_of(seg, p.idx % K);
        reduces.push_back({p.idx, env.mem.reduce_async(rwork_->at(ch.offset * ds),
                                                       rscratch_->at(scratch_off(g, seg, ch)),
                                                       ch.count, c.dtype, c.op)});
        return progressed = true;
      }
      ready[p.idx] = 1;
      ++finished;
      return progressed = true;
    });
    std::erase_if(reduces, [&](const Reducing& p) {
      if (!env.mem.reduce_done(p.ticket)) return false;
      ready[p.idx] = 1;
      ++finished;
      return progressed = true;
    });
    if (progressed) loop.progressed();
    else if (loop.tick() && loop.expired())
      throw TimeoutError(fmt::format(
          "{}: timed out after {:g} s in {} waiting for {} (from left) / {} (to right); {} of {} "
          "ring operations done; roll call: {}",
          env.boot.me(), env.boot.timeout(), activity(), env.boot.who(left), env.boot.who(right),
          finished, 2 * total, env.boot.roll_call()));
  }
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
