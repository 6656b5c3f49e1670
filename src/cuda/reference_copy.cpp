// Reference rows beside `bw`: one plain copy of the message size on each
// rank, device-to-device (copy-d2d), device-to-pinned-host (copy-d2h) and
// pinned-host-to-device (copy-h2d). Ranks take turns, the others waiting at
// a barrier, so each number is what one transfer can reach alone: the
// physical ceilings beside every GPU result. The d2h/h2d rows use the very
// copies the staged path pipelines (MemoryOps::copy_async).
#include <fmt/format.h>

#include "collectives/test.h"
#include "src/bootstrap.h"
#include "src/errors.h"
#include "src/signals.h"

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
    for (int it = -c.warmup; it < c.iters; ++it) {
      double mine = 0;
      for (int turn = 0; turn < env.boot.size(); ++turn) {
        env.boot.barrier();
        if (turn == env.boot.rank()) mine = once(env, c.bytes);
      }
      if (it >= 0) out.times.push_back(mine);
    }
    return out;
  }

 private:
  double once(TestEnv& env, std::size_t bytes) {
    MemoryOps& m = env.mem;
    double t0 = now_seconds();
    if (kind_ == Copy::d2d) {
      m.copy(dst_.data(), src_.data(), bytes);
      m.sync();
      return now_seconds() - t0;
    }
    std::uint64_t ticket = kind_ == Copy::d2h
                               ? m.copy_async(pinned_, src_.data(), bytes, MemoryOps::CopyDir::to_host)
                               : m.copy_async(dst_.data(), pinned_, bytes, MemoryOps::CopyDir::from_host);
    Deadline deadline(env.boot.timeout());
    for (unsigned spins = 0; !m.copy_done(ticket); ++spins)
      if ((spins & 4095u) == 4095u && (throw_if_interrupted(), deadline.expired()))
        throw TimeoutError(fmt::format("{}: a {} B copy did not finish within {:g} s", env.boot.me(),
                                       bytes, env.boot.timeout()));
    return now_seconds() - t0;
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
                       [] { return std::make_unique<CopyReference>(Copy::d2d); }, copy_footprint);
GDR_REGISTER_REFERENCE(reg_copy_d2h, "copy-d2h", "bw", cannot_run,
                       [] { return std::make_unique<CopyReference>(Copy::d2h); }, copy_footprint);
GDR_REGISTER_REFERENCE(reg_copy_h2d, "copy-h2d", "bw", cannot_run,
                       [] { return std::make_unique<CopyReference>(Copy::h2d); }, copy_footprint);

}  // namespace
}  // namespace gdr
