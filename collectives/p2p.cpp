// Point-to-point tests between one pair of ranks at a time (OSU's shapes):
//  latency: ping-pong, one-way time = round trip / 2 (the responder sits out: NaN);
//  bw:      `window` messages one way, then a 4-byte ack; time per message;
//  bibw:    both directions at once; time per message.
// Ranks outside the pair only join the barrier and record NaN.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "src/bootstrap.h"
#include "test.h"
#include "timed_loop.h"

namespace gdr {
namespace {

enum class Kind { latency, bw, bibw };
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class PointToPoint final : public Test {
 public:
  explicit PointToPoint(Kind k) : kind_(k) {}

  void prepare(TestEnv& env, std::size_t max_bytes) override {
    send_ = UniqueBuffer(&env.mem, max_bytes);
    recv_ = UniqueBuffer(&env.mem, max_bytes);
    ack_ = UniqueBuffer(&env.mem, 64);
    // Never time on zeros: the send buffer carries the exact-input pattern.
    env.mem.fill_input(send_.data(), max_bytes / 4, DType::i32, Op::sum, env.boot.rank(), 0);
    env.mem.sync();
    rsend_ = env.transport->register_memory(send_.get());
    rrecv_ = env.transport->register_memory(recv_.get());
    rack_ = env.transport->register_memory(ack_.get());
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    // The ping-pong's receive is posted before the ranks line up, as a real
    // application would have it waiting: a transport whose sender needs the
    // receiver's buffer first (verbs) then pays no extra hop.
    Request pre{};
    auto post_early = [&](const PairRole& r) {
      if (kind_ == Kind::latency) pre = env.transport->post_recv(r.peer, *rrecv_, 0, c.bytes);
    };
    return timed_pair_loop(env, c, [&](const PairRole& r) { return once(env, c, r.peer, r.initiator, pre); },
                           post_early);
  }

 private:
  double once(TestEnv& env, const CaseParams& c, int peer, bool initiator, const Request& pre) {
    Transport& t = *env.transport;
    const std::size_t len = c.bytes;
    std::vector<Request> reqs;
    double t0 = now_seconds();
    switch (kind_) {
      case Kind::latency: {
        if (initiator) {
          wait_one(t, t.post_send(peer, *rsend_, 0, len), env.boot);
          wait_one(t, pre, env.boot);
          return (now_seconds() - t0) / 2;
        }
        wait_one(t, pre, env.boot);
        wait_one(t, t.post_send(peer, *rsend_, 0, len), env.boot);
        return kNaN;
      }
      case Kind::bw: {
        if (initiator) {
          for (int w = 0; w < c.window; ++w) reqs.push_back(t.post_send(peer, *rsend_, 0, len));
          reqs.push_back(t.post_recv(peer, *rack_, 0, 4));
          wait_all(t, reqs, env.boot);
        } else {
          for (int w = 0; w < c.window; ++w) reqs.push_back(t.post_recv(peer, *rrecv_, 0, len));
          wait_all(t, reqs, env.boot);
          wait_one(t, t.post_send(peer, *rack_, 0, 4), env.boot);
        }
        return (now_seconds() - t0) / c.window;
      }
      case Kind::bibw: {
        for (int w = 0; w < c.window; ++w) {
          reqs.push_back(t.post_recv(peer, *rrecv_, 0, len));
          reqs.push_back(t.post_send(peer, *rsend_, 0, len));
        }
        wait_all(t, reqs, env.boot);
        return (now_seconds() - t0) / c.window;
      }
    }
    return kNaN;
  }

  Kind kind_;
  UniqueBuffer send_, recv_, ack_;
  std::unique_ptr<MemRegion> rsend_, rrecv_, rack_;
};

double one_way(const CaseParams& c) { return static_cast<double>(c.bytes); }
double both_ways(const CaseParams& c) { return 2.0 * static_cast<double>(c.bytes); }
double unit(int) { return 1.0; }

GDR_REGISTER_TEST(reg_latency, "latency", true, one_way, unit,
                  [] { return std::make_unique<PointToPoint>(Kind::latency); });
GDR_REGISTER_TEST(reg_bw, "bw", true, one_way, unit,
                  [] { return std::make_unique<PointToPoint>(Kind::bw); });
GDR_REGISTER_TEST(reg_bibw, "bibw", true, both_ways, unit,
                  [] { return std::make_unique<PointToPoint>(Kind::bibw); });

}  // namespace
}  // namespace gdr
