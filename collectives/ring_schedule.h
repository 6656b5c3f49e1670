// The ring allreduce's data layout, kept pure so it can be unit-tested:
// which segment each rank sends and receives at each step, and how a
// segment splits into pipelined chunks.
#pragma once

#include <cstddef>
#include <vector>

namespace gdr::ring {

struct Range {
  std::size_t offset = 0;  // elements
  std::size_t count = 0;
};

// `count` elements cut into `n` near-equal segments (the first count % n get
// one more). Segments may be empty when count < n.
Range segment(std::size_t count, int n, int index);

// Chunk `c` of `nchunks` of a segment, near-equal, possibly empty.
Range chunk(Range seg, std::size_t nchunks, std::size_t c);

// Chunks per segment so that none exceeds chunk_elems (at least 1).
std::size_t chunks_per_segment(std::size_t count, int n, std::size_t chunk_elems);

// Pipeline granularity in bytes: `requested` when set, else automatic. On
// the host 1 MiB keeps reduce and wire overlapped at small cost per chunk; on
// a GPU every chunk pays a kernel launch and an event, so a segment goes in
// about four chunks (1 MiB at least).
std::size_t chunk_bytes(std::size_t requested, bool host_memory, std::size_t bytes, int n);

// Global step g in [0, 2(n-1)): reduce-scatter for g < n-1, then allgather.
inline int steps(int n) { return 2 * (n - 1); }
inline bool is_reduce_step(int g, int n) { return g < n - 1; }
// Segment rank r sends / receives at step g.
int send_segment(int r, int n, int g);
int recv_segment(int r, int n, int g);

}  // namespace gdr::ring
