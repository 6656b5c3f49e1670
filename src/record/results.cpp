#include "record/results.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/stats.h"

namespace gdr {

double rank_median(const CaseRecord& r, int rank) {
  const std::size_t iters = static_cast<std::size_t>(r.params.iters);
  thread_local std::vector<double> v;  // every link of every case: no allocation each
  v.clear();
  for (std::size_t i = 0; i < iters; ++i) {
    double t = r.times[static_cast<std::size_t>(rank) * iters + i];
    if (std::isfinite(t)) v.push_back(t);
  }
  return median_in_place(v);
}

void summarize_record(CaseRecord& r, double algbw_bytes, double busbw_factor) {
  std::vector<double> slow = slowest_per_iteration(r.times, r.ranks, r.params.iters);
  r.slowest = summarize(slow);
  r.algbw_gbps = r.slowest.mean > 0 ? algbw_bytes / r.slowest.mean / 1e9 : 0.0;
  r.busbw_gbps = r.algbw_gbps * busbw_factor;
}

// Each test's traits say (collectives/test.h); a reference row carries the
// traits of the test it stands beside, less the chunk (the runner's plan).
bool uses_window(const CaseParams& c) { return !c.traits.window.empty(); }

bool uses_chunk(const CaseParams& c) { return !c.traits.chunk.empty(); }

}  // namespace gdr
