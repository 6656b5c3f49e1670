// A test that exists only in the test build (tests/mpi/CMakeLists.txt links
// it into gdrbench_with_burst): proof that a new windowed point-to-point test
// is its file plus one line, and that the table, the file, the verdict and
// the analysis take it from its traits as they take bw (test_new_test.py).
//  burst: one iteration = `window` messages one way into one buffer, no
//         acknowledgement; each rank of the pair times its own side; time
//         per message. The receiver checks the last message of a checked
//         iteration against its sender's pattern.
#include <limits>

#include "collectives/test.h"
#include "collectives/timed_loop.h"
#include "src/core/bootstrap.h"
#include "src/memory/payload_pattern.h"

namespace gdr {
namespace {

class Burst final : public Test {
 public:
  void prepare(TestEnv& env, std::size_t max) override {
    send_ = UniqueBuffer(&env.mem, max);
    recv_ = UniqueBuffer(&env.mem, max);
    env.mem.fill_pattern(send_.data(), max, seed(env.boot.rank(), -1));  // never time on zeros
    env.mem.sync();
    rsend_ = env.transport->register_memory(send_.get());
    rrecv_ = env.transport->register_memory(recv_.get());
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    PairHooks h;
    h.before = [&](const PairRole& r, int it, int, bool checked) {
      if (!checked || !r.initiator) return;
      env.mem.fill_pattern(send_.data(), c.bytes, seed(env.boot.rank(), it));
      env.mem.sync();
    };
    h.once = [&](const PairRole& r, int) {
      Transport& t = *env.transport;
      reqs_.clear();
      const double t0 = now_seconds();
      for (int w = 0; w < c.window; ++w)
        reqs_.push_back(r.initiator ? t.post_send(r.peer, *rsend_, 0, c.bytes) : t.post_recv(r.peer, *rrecv_, 0, c.bytes));
      wait_all(t, reqs_, env.boot);
      return (now_seconds() - t0) / c.window;
    };
    h.after = [&](const PairRole& r, int it, int) -> std::uint64_t {
      return r.initiator ? 0 : env.mem.count_wrong_pattern(recv_.data(), c.bytes, seed(r.peer, it));
    };
    return timed_pair_loop(env, c, h);
  }

 private:
  static std::uint64_t seed(int sender, int it) { return pattern::seed(sender, static_cast<std::uint64_t>(it + 1'000'000), 0); }
  std::vector<Request> reqs_;
  UniqueBuffer send_, recv_;
  std::unique_ptr<MemRegion> rsend_, rrecv_;
};

constexpr TestTraits kBurst{.kind = TestKind::bandwidth, .window = "messages per iteration, one way, no ack"};

GDR_REGISTER_TEST(reg_burst, {.name = "burst", .traits = kBurst, .create = [] { return std::make_unique<Burst>(); },
                              .complete = [](CaseParams& c, std::size_t, int) { c.slots = 1; }});

}  // namespace
}  // namespace gdr
