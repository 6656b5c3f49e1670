// Reference rows beside latency, bw and bibw: NCCL's ncclSend/ncclRecv in
// the same shapes as collectives/p2p.cpp (ping-pong round trips back to
// back in batches of 64 after one barrier and one untimed round trip;
// `window` messages and an ack; both directions at once), so "UCX direct vs
// NCCL send/recv" compares like for like. A window is one NCCL group, as
// nccl-tests' sendrecv posts it. The data is not verified (check 0 in the
// file): these rows time NCCL, whose own tests check it.
#include <cmath>
#include <limits>

#include "nccl_api.h"
#include "src/core/bootstrap.h"
#include "test.h"
#include "timed_loop.h"

namespace gdr {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class NcclPointToPoint final : public Test {
 public:
  // The shape of the test it stands beside (collectives/p2p.cpp's traits).
  NcclPointToPoint(TestKind k, int directions) : latency_(k == TestKind::latency), both_ways_(directions == 2) {}

  void prepare(TestEnv& env, std::size_t max_bytes) override {
    send_ = UniqueBuffer(&env.mem, max_bytes);  // also makes this rank's GPU current
    recv_ = UniqueBuffer(&env.mem, max_bytes);
    ack_ = UniqueBuffer(&env.mem, 64);
    env.mem.fill_input(send_.data(), max_bytes / 4, DType::i32, Op::sum, env.boot.rank(), 0);
    env.mem.sync();
    comm_.init(env);
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    PairHooks h;
    h.once = [&](const PairRole& r, int) { return once(env, c, r.peer, r.initiator); };
    if (latency_) {
      h.batch = 64;
      h.lead = [&](const PairRole& r) { once(env, c, r.peer, r.initiator); };
    }
    return timed_pair_loop(env, c, h);
  }

 private:
  void send(TestEnv& env, const void* buf, std::size_t len, int peer) {
    comm_.check(env, nccl::Api::get().send(buf, len, kUint8, peer, comm_.comm(), comm_.stream()), "ncclSend");
  }
  void recv(TestEnv& env, void* buf, std::size_t len, int peer) {
    comm_.check(env, nccl::Api::get().recv(buf, len, kUint8, peer, comm_.comm(), comm_.stream()), "ncclRecv");
  }
  void group(TestEnv& env, bool start) {
    nccl::Api& api = nccl::Api::get();
    comm_.check(env, start ? api.group_start() : api.group_end(), start ? "ncclGroupStart" : "ncclGroupEnd");
  }

  double once(TestEnv& env, const CaseParams& c, int peer, bool initiator) {
    const std::size_t len = c.bytes;
    double t0 = now_seconds();
    if (latency_) {
      if (initiator) {
        send(env, send_.data(), len, peer);
        recv(env, recv_.data(), len, peer);
      } else {
        recv(env, recv_.data(), len, peer);
        send(env, send_.data(), len, peer);
      }
      comm_.wait(env, "ncclSend/ncclRecv ping-pong");
      return initiator ? (now_seconds() - t0) / 2 : kNaN;
    }
    group(env, true);
    for (int w = 0; w < c.window; ++w) {
      if (both_ways_) {
        recv(env, recv_.data(), len, peer);
        send(env, send_.data(), len, peer);
      } else {
        initiator ? send(env, send_.data(), len, peer) : recv(env, recv_.data(), len, peer);
      }
    }
    group(env, false);
    if (!both_ways_) initiator ? recv(env, ack_.data(), 4, peer) : send(env, ack_.data(), 4, peer);
    comm_.wait(env, both_ways_ ? "ncclSend/ncclRecv both ways" : "ncclSend/ncclRecv window");
    return (now_seconds() - t0) / c.window;
  }

  static constexpr int kUint8 = 1;  // ncclUint8: p2p tests move bytes
  bool latency_, both_ways_;
  UniqueBuffer send_, recv_, ack_;
  nccl::Communicator comm_;  // destroyed before the buffers it used
};

std::string cannot_run(const CaseParams& c) { return nccl::cannot_run(c.mem, c.path); }

GDR_REGISTER_REFERENCE(reg_nccl_latency, "nccl", "latency", cannot_run,
                       [] { return std::make_unique<NcclPointToPoint>(TestKind::latency, 1); });
GDR_REGISTER_REFERENCE(reg_nccl_bw, "nccl", "bw", cannot_run,
                       [] { return std::make_unique<NcclPointToPoint>(TestKind::bandwidth, 1); });
GDR_REGISTER_REFERENCE(reg_nccl_bibw, "nccl", "bibw", cannot_run,
                       [] { return std::make_unique<NcclPointToPoint>(TestKind::bandwidth, 2); });

}  // namespace
}  // namespace gdr
