// The payload of point-to-point messages: byte i of a message with seed s
// is byte (i % 8), little-endian, of word(s, i / 8). Seeds differ per
// sender, iteration and slot (pattern::seed), so a stale buffer, a message
// that landed in the wrong place or one cut short fails the check. Shared
// by the host loops and the CUDA kernels so both write the same bytes.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GDR_HOST_DEVICE __host__ __device__
#else
#define GDR_HOST_DEVICE
#endif

namespace gdr::pattern {

// SplitMix64's finalizer over (seed, index): cheap, and neighbouring
// indices or seeds give unrelated words.
GDR_HOST_DEVICE inline std::uint64_t word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + (index + 1) * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

GDR_HOST_DEVICE inline unsigned char byte_at(std::uint64_t seed, std::uint64_t i) {
  return static_cast<unsigned char>(word(seed, i >> 3) >> ((i & 7u) * 8u));
}

// The seed of the message `sender` sends from `slot` in iteration `iter`.
inline std::uint64_t seed(int sender, std::uint64_t iter, std::uint64_t slot) {
  return word(word(static_cast<std::uint64_t>(sender) + 1, iter), slot);
}

}  // namespace gdr::pattern
