// Summary statistics of per-iteration times.
#pragma once

#include <span>
#include <vector>

namespace gdr {

struct Summary {
  double mean = 0, min = 0, max = 0, median = 0, stddev = 0;
  int n = 0;
};

// NaN entries (ranks that did not take part) are ignored.
Summary summarize(std::span<const double> xs);

// Per iteration, the slowest rank's time. `times` is ranks x iters, row-major.
std::vector<double> slowest_per_iteration(std::span<const double> times, int ranks, int iters);

// Bandwidth factors, as nccl-tests defines them.
inline double allreduce_busbw_factor(int ranks) {
  return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0;
}

}  // namespace gdr
