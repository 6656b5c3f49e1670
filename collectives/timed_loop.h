// The loop every allreduce-like test shares: fill exact inputs, line the
// ranks up, time one operation, check the result. Filling, the barrier and
// the check stay outside the timed region.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

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

}  // namespace gdr
