// Summary statistics of per-iteration times.
#pragma once

#include <span>
#include <vector>

namespace gdr {

struct Summary {
  double mean = 0, min = 0, max = 0, median = 0, p99 = 0, stddev = 0;
  int n = 0;
};

// NaN entries (ranks that did not take part) are ignored.
Summary summarize(std::span<const double> xs);

// The p-th percentile (0..100) of ascending `sorted`, exactly as NumPy's
// default np.percentile(x, p) (method "linear", Hyndman & Fan type 7): index
// h = (n-1) * p/100 into the sorted values, linear between its neighbours.
// Same arithmetic as NumPy, so a reader recomputes the same double.
double percentile_linear(std::span<const double> sorted, double p);

// The median of v (no NaN in it), reordering v, in O(n): a fleet's millions of links and every
// link of every case. Even counts average the two middle values, as np.median does. NaN if empty.
double median_in_place(std::vector<double>& v);

// Per iteration, the slowest rank's time. `times` is ranks x iters, row-major.
std::vector<double> slowest_per_iteration(std::span<const double> times, int ranks, int iters);

// Bus bandwidth factor of allreduce, nccl-tests' 2(n-1)/n for every n: with
// one rank no byte crosses a link, so busbw is 0 (not the local copy speed).
inline double allreduce_busbw_factor(int ranks) {
  return ranks > 0 ? 2.0 * (ranks - 1) / ranks : 0.0;
}

}  // namespace gdr
