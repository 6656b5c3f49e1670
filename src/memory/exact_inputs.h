// Inputs whose reductions are exact in every datatype, for any rank count
// that the datatype can hold (limits in README.md).
//
// Rank 0 carries a wide, phase-dependent value and every other rank a
// narrow one that depends on its rank, so that the result varies from
// element to element for every rank count (if all ranks drew from the same
// small set, a sum or min over enough ranks would be the same everywhere and
// a misplaced segment would pass):
//  - sum  lies in [-1, n + 1]     (exact in bfloat16 up to n = 254),
//  - prod is +-2^k, k <= n/8 + 1  (int32 holds it up to n = 240),
//  - min/max are one of the inputs.
// The value depends on the phase p = (mix(i) + it) mod 8, so a misplaced
// segment or a stale buffer from the previous iteration is caught, while the
// expected result depends only on p: checks use an 8-entry table.
// Shared by the host code and the CUDA kernels, hence the GDR_HD marker.
#pragma once

#if defined(__CUDACC__)
#define GDR_HD __host__ __device__
#else
#define GDR_HD
#endif

#include <cstdint>

namespace gdr::exact {

inline constexpr int kPeriod = 8;

// A cheap integer hash so neighbouring elements and segments differ.
GDR_HD inline std::uint64_t mix(std::uint64_t i) {
  i ^= i >> 17;
  i *= 0xed5ad4bbu;
  i ^= i >> 11;
  i *= 0xac4c1b51u;
  i ^= i >> 15;
  return i;
}

GDR_HD inline std::uint64_t phase(std::uint64_t i, int it) {
  return (mix(i) + static_cast<std::uint64_t>(it)) % kPeriod;
}

// op: 0 sum, 1 prod, 2 min, 3 max (the order of gdr::Op); p = phase(i, it).
GDR_HD inline double input_at_phase(int op, std::uint64_t p, int r) {
  const std::uint64_t hi = (p / 4u) % 2u, ur = static_cast<std::uint64_t>(r);
  const double low = static_cast<double>(p % 4u) - 1.0;  // -1 .. 2
  const double wide = static_cast<double>(p) - 3.0;      // -3 .. 4
  const double bit = static_cast<double>((hi + ur) % 2u);
  switch (op) {
    case 0: return r == 0 ? low : bit;
    case 1:
      if (r == 0) return (p % 2u ? -1.0 : 1.0) * (p % 4u >= 2u ? 2.0 : 1.0);
      return (hi + ur) % 8u == 0 ? 2.0 : 1.0;
    case 2: return r == 0 ? wide : 2.0 + bit;
    default: return r == 0 ? wide : -2.0 + bit;
  }
}

GDR_HD inline double expected_at_phase(int op, std::uint64_t p, int nranks) {
  double acc = input_at_phase(op, p, 0);
  for (int r = 1; r < nranks; ++r) {
    double v = input_at_phase(op, p, r);
    if (op == 0) acc += v;
    else if (op == 1) acc *= v;
    else if (op == 2) acc = v < acc ? v : acc;
    else acc = v > acc ? v : acc;
  }
  return acc;
}

GDR_HD inline double input(int op, std::uint64_t i, int r, int it) {
  return input_at_phase(op, phase(i, it), r);
}
GDR_HD inline double expected(int op, std::uint64_t i, int nranks, int it) {
  return expected_at_phase(op, phase(i, it), nranks);
}

}  // namespace gdr::exact
