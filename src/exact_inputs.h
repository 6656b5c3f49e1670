// Inputs whose reductions are exact in every datatype, for any rank count
// that the datatype can hold (documented limits in README.md).
//
// Element i of rank r at iteration `it` gets a small integer, so that
//  - sum  lies in [-n, 2n]   (exact in bfloat16 up to n = 128),
//  - prod is +-2^k, k <= about n/8 (int32 holds it up to n = 240),
//  - min/max are one of the inputs.
// Values change with i, r and the iteration, so a misplaced segment, a
// missing rank or a stale buffer from the previous iteration is caught.
// Shared by the host code and the CUDA kernels, hence the GDR_HD marker.
#pragma once

#if defined(__CUDACC__)
#define GDR_HD __host__ __device__
#else
#define GDR_HD
#endif

#include <cstdint>

namespace gdr::exact {

// op: 0 sum, 1 prod, 2 min, 3 max (the order of gdr::Op).
GDR_HD inline double input(int op, std::uint64_t i, int r, int it) {
  std::uint64_t k = i + 3u * static_cast<std::uint64_t>(r) + static_cast<std::uint64_t>(it);
  if (op == 1) {
    std::uint64_t m = (i + static_cast<std::uint64_t>(r) + static_cast<std::uint64_t>(it)) % 8u;
    return m == 0 ? 2.0 : (m == 4 ? -1.0 : 1.0);
  }
  return static_cast<double>(k % 4u) - 1.0;  // -1, 0, 1, 2
}

GDR_HD inline double expected(int op, std::uint64_t i, int nranks, int it) {
  double acc = input(op, i, 0, it);
  for (int r = 1; r < nranks; ++r) {
    double v = input(op, i, r, it);
    if (op == 0) acc += v;
    else if (op == 1) acc *= v;
    else if (op == 2) acc = v < acc ? v : acc;
    else acc = v > acc ? v : acc;
  }
  return acc;
}

}  // namespace gdr::exact
