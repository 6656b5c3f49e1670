// The loops every test shares. Filling, checking and the barriers that
// line the ranks up stay outside the timed region; under --iters auto the
// ranks agree after the warm-up on how many timed iterations fit the case's
// time budget (agreed_iters).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>

#include "src/core/bootstrap.h"
#include "src/memory/payload_pattern.h"
#include "test.h"

namespace gdr {

// GDR_SELFTEST_CORRUPT=1 spoils one element (one byte of a received message
// in point-to-point tests) after the first timed iteration, to prove end to
// end that a wrong result is counted, stored and turns the exit status to 1
// (tests/mpi use it).
inline bool selftest_corrupt(const TestEnv& env) { return env.settings.get<CollectiveSettings>().selftest_corrupt; }

inline void corrupt_first_element(TestEnv& env, void* work, const CaseParams& c) {
  unsigned char junk[8];
  std::memset(junk, 0x5a, sizeof junk);
  env.mem.from_host(work, junk, dtype_size(c.dtype));
  env.mem.sync();
}

// Never fewer timed iterations under --iters auto: a median needs a few.
inline constexpr int kMinAutoIters = 5;

// The timed iterations of this case: c.iters when the user fixed them;
// under --iters auto as many as fit c.case_time at the slowest rank's
// warm-up pace (`warm_seconds` over `warm_iters`), between kMinAutoIters
// and c.iters. Collective: every rank calls it once per case.
inline int agreed_iters(TestEnv& env, const CaseParams& c, double warm_seconds, int warm_iters) {
  if (!c.iters_auto) return c.iters;
  const double pace = env.boot.allreduce_max(warm_iters > 0 ? warm_seconds / warm_iters : 0.0);
  if (!(pace > 0)) return c.iters;
  const double fit = std::floor(c.case_time / pace);
  return static_cast<int>(std::clamp(fit, static_cast<double>(std::min(kMinAutoIters, c.iters)),
                                     static_cast<double>(c.iters)));
}

// The skeleton of the batched loops: the warm-up iterations, then as many
// timed ones as agreed_iters allows at the warm-up's pace, then (--check
// after) `check_count` more, untimed and checked.
// phase(first, count, timed, checked) runs iterations first .. first + count - 1.
template <class Phase>
void warm_then_timed(TestEnv& env, const CaseParams& c, CaseOutcome& out, Phase&& phase, int check_count = 1) {
  const double w0 = now_seconds();
  phase(-c.warmup, c.warmup, false, false);
  const int iters = agreed_iters(env, c, now_seconds() - w0, c.warmup);
  out.times.reserve(iters);
  phase(0, iters, true, c.check == CheckMode::every);
  if (c.check == CheckMode::after) phase(iters, std::max(1, std::min(check_count, iters)), false, true);
}

inline CaseOutcome timed_allreduce_loop(TestEnv& env, const CaseParams& c, void* work,
                                        const std::function<void()>& op_once) {
  CaseOutcome out;
  const int rank = env.boot.rank(), n = env.boot.size();
  bool corrupted = false;
  // The reduction is in place, so every iteration refills its input (untimed).
  auto one = [&](int it, bool timed, bool checked) {  // it < 0: warm-up
    // Iteration index shifted so warm-up data differs from timed data.
    const int data_it = it + c.warmup;
    env.mem.fill_input(work, c.count, c.dtype, c.op, rank, data_it);
    env.mem.sync();
    env.boot.barrier();
    double t0 = now_seconds();
    op_once();
    env.mem.sync();
    double t1 = now_seconds();
    if (timed) out.times.push_back(t1 - t0);
    if (!checked) return;
    if (!corrupted && rank == n - 1 && selftest_corrupt(env)) corrupt_first_element(env, work, c);
    corrupted = true;
    out.wrong += env.mem.count_wrong(work, c.count, c.dtype, c.op, n, data_it);
    ++out.checked;
  };
  warm_then_timed(env, c, out, [&](int first, int count, bool timed, bool checked) {
    for (int it = first; it < first + count; ++it) one(it, timed, checked);
  });
  return out;
}

// Where this rank stands in a point-to-point case.
struct PairRole {
  bool in_pair = false;
  bool initiator = false;  // the pair's src
  int peer = -1;
};

// The end of a point-to-point test's prepare(): the first `send_bytes` of
// `send` get this rank's pattern, so that no message is ever timed on zeros
// (even with --check 0), and each buffer is registered with the transport
// into its region, in the order given (the same on every rank).
struct Registration {
  const UniqueBuffer& buffer;
  std::unique_ptr<MemRegion>& region;
};
inline void seed_and_register(TestEnv& env, const UniqueBuffer& send, std::size_t send_bytes,
                              std::initializer_list<Registration> buffers) {
  env.mem.fill_pattern(send.data(), send_bytes, pattern::seed(env.boot.rank(), ~0ull, 0));
  env.mem.sync();
  for (const Registration& b : buffers) b.region = env.transport->register_memory(b.buffer.get());
}

// A point-to-point test as timed_pair_loop drives it. Iterations come in
// batches of up to `batch`, timed back to back after one barrier (latency:
// thousands of round trips, as OSU times them; bw and bibw: one window per
// barrier). Iteration numbers run from -warmup; every hook but `once` is
// untimed, and only the pair's two ranks call the hooks.
struct PairHooks {
  int batch = 1;
  // Before the batch's barrier: fill what will be sent (`checked`: with the
  // patterns the check expects), post receives.
  std::function<void(const PairRole&, int first, int n, bool checked)> before = {};
  // After the barrier, untimed: one exchange in the shape of the timed ones
  // (a round trip, a message each way), so the barrier's exit skew passes
  // before the first timed iteration. (It does not undo what a receiver's
  // check kernel costs the next window when two processes time-slice one
  // GPU without CUDA MPS: measured on an H200, see jobs/gpu/README.md.)
  std::function<void(const PairRole&)> lead = {};
  // One timed iteration: seconds, or NaN for a rank without a time.
  std::function<double(const PairRole&, int it)> once;
  // After a checked batch: wrong elements among what arrived.
  std::function<std::uint64_t(const PairRole&, int first, int n)> after = {};
  // Iterations per batch that the check batch after the timed ones runs (--check after).
  int check_count = 1;
};

// Ranks outside the pair only join the barriers and record NaN.
inline CaseOutcome timed_pair_loop(TestEnv& env, const CaseParams& c, const PairHooks& h) {
  CaseOutcome out;
  const int me = env.boot.rank();
  PairRole role{me == c.src || me == c.dst, me == c.src, me == c.src ? c.dst : c.src};
  const int batch = std::max(1, h.batch);
  auto phase = [&](int first, int count, bool timed, bool checked) {
    for (int done = 0; done < count;) {
      const int it = first + done, n = std::min(batch, count - done);
      if (role.in_pair && h.before) h.before(role, it, n, checked);
      if (role.in_pair && env.transport) env.transport->start_posted();  // untimed: before the barrier
      env.boot.barrier();
      if (role.in_pair && h.lead) h.lead(role);
      for (int k = 0; k < n; ++k) {
        double t = role.in_pair ? h.once(role, it + k) : std::numeric_limits<double>::quiet_NaN();
        if (timed) out.times.push_back(t);
      }
      if (checked && role.in_pair && h.after) {
        out.wrong += h.after(role, it, n);
        out.checked += n;
      }
      done += n;
    }
  };
  warm_then_timed(env, c, out, phase, h.check_count);
  return out;
}

}  // namespace gdr
