#include "ring_schedule.h"

#include <algorithm>

namespace gdr::ring {
namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }

Range split(Range whole, std::size_t parts, std::size_t i) {
  std::size_t base = whole.count / parts, extra = whole.count % parts;
  std::size_t off = i * base + std::min(i, extra);
  return {whole.offset + off, base + (i < extra ? 1 : 0)};
}
}  // namespace

Range segment(std::size_t count, int n, int index) {
  return split({0, count}, static_cast<std::size_t>(n), static_cast<std::size_t>(index));
}

Range chunk(Range seg, std::size_t nchunks, std::size_t c) { return split(seg, nchunks, c); }

std::size_t chunks_per_segment(std::size_t count, int n, std::size_t chunk_elems) {
  std::size_t largest = segment(count, n, 0).count;
  chunk_elems = std::max<std::size_t>(chunk_elems, 1);
  return std::max<std::size_t>(1, (largest + chunk_elems - 1) / chunk_elems);
}

std::size_t chunk_bytes(std::size_t requested, bool host_memory, std::size_t bytes, int n) {
  if (requested) return requested;
  if (host_memory) return 1u << 20;
  return std::max<std::size_t>(1u << 20, bytes / static_cast<std::size_t>(std::max(n, 1)) / 4);
}

// Reduce-scatter step s: send (r - s), receive (r - s - 1); afterwards rank r
// holds the full sum of segment (r + 1). Allgather step a: send (r + 1 - a),
// receive (r - a).
int send_segment(int r, int n, int g) {
  return is_reduce_step(g, n) ? mod(r - g, n) : mod(r + 1 - (g - (n - 1)), n);
}
int recv_segment(int r, int n, int g) {
  return is_reduce_step(g, n) ? mod(r - g - 1, n) : mod(r - (g - (n - 1)), n);
}

}  // namespace gdr::ring
