// Buffers a finished lane gives back, kept for the next lanes of the sweep
// instead of freed. Freeing would not always return the memory: a peer on
// the same node may still map it (UCX's cuda_ipc keeps its mapping of a
// peer's buffer cached, so the pages stay held after cudaFree; measured on
// the H200: the next lane's cudaMalloc failed). Reusing the allocation keeps
// such mappings valid and the memory bounded by the largest block of lanes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "memory.h"

namespace gdr {

// The cache's policy: the smallest kept entry that holds `bytes` (its
// index), or -1 when none does.
template <class T, class SizeOf>
std::ptrdiff_t best_fit(const std::vector<T>& kept, std::size_t bytes, SizeOf size_of) {
  std::ptrdiff_t best = -1;
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (size_of(kept[i]) >= bytes && (best < 0 || size_of(kept[i]) < size_of(kept[best]))) best = i;
  return best;
}

// The same policy on sizes alone, for the check before a sweep: the most
// memory of one kind held at once while lanes take and give back buffers in
// the order of the plan (what is kept counts: it is not freed).
class CacheModel {
 public:
  // Allocation sizes the lane ends up holding, to give back later.
  std::vector<std::size_t> take(const std::vector<std::size_t>& buffers);
  void give(const std::vector<std::size_t>& held);
  void hold(std::size_t bytes) { held_ += bytes; peak_ = std::max(peak_, held_); }  // not cached
  void drop(std::size_t bytes) { held_ -= bytes; }
  std::size_t peak() const { return peak_; }

 private:
  std::vector<std::size_t> kept_;
  std::size_t held_ = 0, peak_ = 0;  // lent + kept + held beside
};

// alloc() takes the smallest kept buffer that is large enough before
// allocating; free() keeps it. Everything else goes to the kind's table.
class CachedMemory final : public ForwardingMemory {
 public:
  explicit CachedMemory(MemoryOps& real) : ForwardingMemory(real) {}
  ~CachedMemory() override { release(); }
  CachedMemory(const CachedMemory&) = delete;
  CachedMemory& operator=(const CachedMemory&) = delete;

  Buffer alloc(std::size_t bytes) override;
  void free(Buffer& b) override;
  void release();  // frees what is kept
  std::size_t kept_bytes() const;

 private:
  std::vector<Buffer> kept_;  // .bytes: what was allocated
  std::vector<Buffer> lent_;  // handed out: their allocated sizes, by pointer
};

}  // namespace gdr
