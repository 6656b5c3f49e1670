#include "stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gdr {

Summary summarize(std::span<const double> xs) {
  std::vector<double> v;
  v.reserve(xs.size());
  for (double x : xs)
    if (!std::isnan(x)) v.push_back(x);
  Summary s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) {
    s.mean = s.min = s.max = s.median = s.stddev = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  std::size_t h = v.size() / 2;
  s.median = v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / s.n;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  return s;
}

std::vector<double> slowest_per_iteration(std::span<const double> times, int ranks, int iters) {
  std::vector<double> out(iters, std::numeric_limits<double>::quiet_NaN());
  for (int i = 0; i < iters; ++i)
    for (int r = 0; r < ranks; ++r) {
      double t = times[static_cast<std::size_t>(r) * iters + i];
      if (!std::isnan(t) && (std::isnan(out[i]) || t > out[i])) out[i] = t;
    }
  return out;
}

}  // namespace gdr
