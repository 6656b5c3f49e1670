#include "stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gdr {

double median_in_place(std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto m = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), m, v.end());
  return v.size() % 2 ? *m : (*std::max_element(v.begin(), m) + *m) / 2;
}

Summary summarize(std::span<const double> xs) {
  std::vector<double> v;
  v.reserve(xs.size());
  for (double x : xs)
    if (!std::isnan(x)) v.push_back(x);
  Summary s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) {
    s.mean = s.min = s.max = s.median = s.p99 = s.stddev = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  std::size_t h = v.size() / 2;
  s.median = v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  s.p99 = percentile_linear(v, 99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / s.n;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  return s;
}

double percentile_linear(std::span<const double> sorted, double p) {
  const std::size_t n = sorted.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  // NumPy: q = p / 100; virtual index (n-1) * q; neighbours floor and +1
  // (clipped); gamma its fraction; _lerp, which interpolates from the upper
  // neighbour when gamma >= 0.5.
  const double h = static_cast<double>(n - 1) * (p / 100.0);
  const double lo = std::floor(h);
  const std::size_t i = std::min(static_cast<std::size_t>(lo), n - 1);
  const std::size_t j = std::min(i + 1, n - 1);
  const double g = h - lo, a = sorted[i], b = sorted[j], d = b - a;
  return g >= 0.5 ? b - d * (1 - g) : a + d * g;
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
