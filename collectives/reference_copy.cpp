// Reference rows beside `bw`, in bw's shape: one iteration is a window of
// `window` copies of the message size issued at once on one stream and
// timed by CUDA events (MemoryOps::time_copies), device-to-device
// (copy-d2d: the ceiling of a direct transfer between ranks on one GPU,
// which CUDA IPC makes a device-to-device copy), device-to-pinned-host
// (copy-d2h) and pinned-host-to-device (copy-h2d: the two halves of the
// staged path). Ranks take turns, the others waiting at a barrier, so each
// number is what one copy engine reaches alone. Time per copy = window
// time / window, as bw's time per message.
#include <fmt/format.h>

#include "collectives/test.h"
#include "collectives/timed_loop.h"
#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/core/signals.h"

namespace gdr {
namespace {

enum class Copy { d2d, d2h, h2d };

class CopyReference final : public Test {
 public:
  explicit CopyReference(Copy k) : kind_(k) {}
  ~CopyReference() override {
    if (pinned_) mem_->free_pinned(pinned_);
  }

  void prepare(TestEnv& env, std::size_t max_bytes) override {
    mem_ = &env.mem;
    src_ = UniqueBuffer(&env.mem, max_bytes);
    dst_ = UniqueBuffer(&env.mem, max_bytes);
    pinned_ = env.mem.alloc_pinned(max_bytes);
    // Never time on zeros.
    env.mem.fill_input(src_.data(), max_bytes / 4, DType::i32, Op::sum, env.boot.rank(), 0);
    env.mem.sync();
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    CaseOutcome out;
    auto iteration = [&] {
      double mine = 0;
      for (int turn = 0; turn < env.boot.size(); ++turn) {
        env.boot.barrier();
        if (turn == env.boot.rank()) mine = window(env, c);
      }
      return mine;
    };
    const double w0 = now_seconds();
    for (int it = 0; it < c.warmup; ++it) iteration();
    const int iters = agreed_iters(env, c, now_seconds() - w0, c.warmup);
    for (int it = 0; it < iters; ++it) out.times.push_back(iteration());
    return out;
  }

 private:
  // Seconds per copy of one window.
  double window(TestEnv& env, const CaseParams& c) {
    using K = MemoryOps::CopyKind;
    const double t = kind_ == Copy::d2d   ? env.mem.time_copies(dst_.data(), src_.data(), c.bytes, c.window, K::within, env.boot.timeout())
                     : kind_ == Copy::d2h ? env.mem.time_copies(pinned_, src_.data(), c.bytes, c.window, K::to_host, env.boot.timeout())
                                          : env.mem.time_copies(dst_.data(), pinned_, c.bytes, c.window, K::from_host, env.boot.timeout());
    return t / c.window;
  }

  Copy kind_;
  MemoryOps* mem_ = nullptr;
  UniqueBuffer src_, dst_;
  void* pinned_ = nullptr;
};

std::string cannot_run(const CaseParams& c) {
  if (c.mem != MemKind::cuda) return "copy references time device copies (-m cuda)";
  if (c.path != Path::direct) return "copy references are shown once, with the direct path";
  MemoryOps* ops = memory_ops(MemKind::cuda);
  return ops ? ops->unavailable_reason() : "no CUDA memory kind";
}

// src, dst and a pinned host buffer, as prepare() allocates them.
Footprint copy_footprint(std::size_t max, int) { return Footprint{{max, max}, max}; }

GDR_REGISTER_REFERENCE(reg_copy_d2d, "copy-d2d", "bw", cannot_run,
                       [] { return std::make_unique<CopyReference>(Copy::d2d); }, copy_footprint,
                       "the ceiling of a direct bw between ranks on one GPU (CUDA IPC moves it as a "
                       "device-to-device copy); a window of 64 copies on one stream, timed by CUDA events, "
                       "one rank at a time");
GDR_REGISTER_REFERENCE(reg_copy_d2h, "copy-d2h", "bw", cannot_run,
                       [] { return std::make_unique<CopyReference>(Copy::d2h); }, copy_footprint,
                       "the ceiling of the staged path's first half (device to pinned host) and of any bw "
                       "whose bytes leave the GPU over its PCIe link; same window, CUDA events");
GDR_REGISTER_REFERENCE(reg_copy_h2d, "copy-h2d", "bw", cannot_run,
                       [] { return std::make_unique<CopyReference>(Copy::h2d); }, copy_footprint,
                       "the ceiling of the staged path's last half (pinned host to device) and of any bw "
                       "whose bytes enter the GPU over its PCIe link; same window, CUDA events");

}  // namespace
}  // namespace gdr
