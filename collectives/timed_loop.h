// The loop every allreduce-like test shares: fill exact inputs, line the
// ranks up, time one operation, check the result. Filling, the barrier and
// the check stay outside the timed region.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

#include "src/bootstrap.h"
#include "test.h"

namespace gdr {

// GDR_SELFTEST_CORRUPT=1 spoils one element on the last rank after the first
// timed iteration, to prove end to end that a wrong result is counted,
// stored and turns the exit status to 1 (tests/mpi use it).
inline bool selftest_corrupt() {
  static const bool on = std::getenv("GDR_SELFTEST_CORRUPT") != nullptr;
  return on;
}

inline void corrupt_first_element(TestEnv& env, void* work, const CaseParams& c) {
  unsigned char junk[8];
  std::memset(junk, 0x5a, sizeof junk);
  env.mem.from_host(work, junk, dtype_size(c.dtype));
  env.mem.sync();
}

inline CaseOutcome timed_allreduce_loop(TestEnv& env, const CaseParams& c, void* work,
                                        const std::function<void()>& op_once) {
  CaseOutcome out;
  out.times.reserve(c.iters);
  const int rank = env.boot.rank(), n = env.boot.size();
  for (int it = -c.warmup; it < c.iters; ++it) {
    // Iteration index shifted so warm-up data differs from timed data.
    const int data_it = it + c.warmup;
    env.mem.fill_input(work, c.count, c.dtype, c.op, rank, data_it);
    env.mem.sync();
    env.boot.barrier();
    double t0 = now_seconds();
    op_once();
    env.mem.sync();
    double t1 = now_seconds();
    if (it < 0) continue;
    out.times.push_back(t1 - t0);
    if (it == 0 && rank == n - 1 && selftest_corrupt()) corrupt_first_element(env, work, c);
    if (c.check) out.wrong += env.mem.count_wrong(work, c.count, c.dtype, c.op, n, data_it);
  }
  return out;
}

// Where this rank stands in a point-to-point case.
struct PairRole {
  bool in_pair = false;
  bool initiator = false;  // the pair's src
  int peer = -1;
};

// The loop every point-to-point test shares: line all ranks up, let the pair
// time one exchange (`once` returns seconds, or NaN for a rank without a
// time); ranks outside the pair only join the barrier and record NaN.
// `before_barrier` runs first in each iteration (a receive to pre-post).
inline CaseOutcome timed_pair_loop(TestEnv& env, const CaseParams& c,
                                   const std::function<double(const PairRole&)>& once,
                                   const std::function<void(const PairRole&)>& before_barrier = {}) {
  CaseOutcome out;
  const int me = env.boot.rank();
  PairRole role{me == c.src || me == c.dst, me == c.src, me == c.src ? c.dst : c.src};
  for (int it = -c.warmup; it < c.iters; ++it) {
    if (before_barrier && role.in_pair) before_barrier(role);
    env.boot.barrier();
    double t = role.in_pair ? once(role) : std::numeric_limits<double>::quiet_NaN();
    if (it >= 0) out.times.push_back(t);
  }
  return out;
}

}  // namespace gdr
