// The loop every allreduce-like test shares: fill exact inputs, line the
// ranks up, time one operation, check the result. Filling, the barrier and
// the check stay outside the timed region.
#pragma once

#include <cmath>
#include <functional>

#include "src/bootstrap.h"
#include "test.h"

namespace gdr {

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
    if (c.check) out.wrong += env.mem.count_wrong(work, c.count, c.dtype, c.op, n, data_it);
  }
  return out;
}

}  // namespace gdr
