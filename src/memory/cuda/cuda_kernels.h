// Launchers for the CUDA memory kind's kernels (cuda_kernels.cu), with plain
// C++ signatures so cuda_memory.cpp compiles with the host compiler.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/datatype.h"

namespace gdr::cuda {

struct Launch {
  cudaStream_t stream;
  int max_blocks;  // resident blocks that fill the GPU; grid-stride beyond that
};

// The 8 input values of one (op, rank), one per phase (exact_inputs.h), as
// raw element bits computed by the host code so both sides agree bit for bit.
struct InputTable {
  alignas(16) unsigned char bytes[8 * 8];
};
// The 8 expected results, one per phase.
struct ExpectedTable {
  double v[8];
};

inline constexpr int kThreads = 512;

cudaError_t launch_reduce(void* dst, const void* src, std::size_t count, DType t, Op op, Launch l);
cudaError_t launch_fill(void* dst, std::size_t count, std::size_t elem_size, const InputTable& tab,
                        int it, Launch l);
// Adds the number of wrong elements to *d_counter (device memory).
cudaError_t launch_count_wrong(const void* buf, std::size_t count, DType t,
                               const ExpectedTable& tab, int it, unsigned long long* d_counter,
                               Launch l);

// Point-to-point payloads (pattern.h) for n consecutive slots of `bytes`
// each, slot k with seeds s[k], in one launch: fill them; add the number of
// bytes that differ to *d_counter. Passed by value as a kernel parameter.
struct PatternSeeds {
  static constexpr int kMost = 64;
  std::uint64_t s[kMost];
  int n = 0;
};
cudaError_t launch_fill_pattern(void* dst, std::size_t bytes, const PatternSeeds& seeds, Launch l);
cudaError_t launch_count_wrong_pattern(const void* buf, std::size_t bytes, const PatternSeeds& seeds,
                                       unsigned long long* d_counter, Launch l);

}  // namespace gdr::cuda
