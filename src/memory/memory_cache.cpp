#include "memory_cache.h"

#include <algorithm>

namespace gdr {

Buffer CachedMemory::alloc(std::size_t bytes) {
  Buffer b;
  if (std::ptrdiff_t i = best_fit(kept_, bytes, [](const Buffer& k) { return k.bytes; }); i >= 0) {
    b = kept_[i];
    kept_.erase(kept_.begin() + i);
  } else {
    try {
      b = inner_.alloc(bytes);
    } catch (const OutOfMemoryError&) {
      if (kept_.empty()) throw;
      release();  // what is kept does not fit this request: give it back and try once more
      b = inner_.alloc(bytes);
    }
  }
  lent_.push_back(b);
  b.bytes = bytes;  // a transport registers what was asked for
  return b;
}

void CachedMemory::free(Buffer& b) {
  auto it = std::find_if(lent_.begin(), lent_.end(), [&](const Buffer& l) { return l.ptr == b.ptr; });
  if (it == lent_.end()) {
    inner_.free(b);  // not ours: never happens, but do not leak
    return;
  }
  kept_.push_back(*it);
  lent_.erase(it);
  b.ptr = nullptr;
}

void CachedMemory::release() {
  for (Buffer& b : kept_) inner_.free(b);
  kept_.clear();
}

std::size_t CachedMemory::kept_bytes() const {
  std::size_t n = 0;
  for (const Buffer& b : kept_) n += b.bytes;
  return n;
}

std::vector<std::size_t> CacheModel::take(const std::vector<std::size_t>& buffers) {
  std::vector<std::size_t> held;
  for (std::size_t bytes : buffers) {
    if (std::ptrdiff_t i = best_fit(kept_, bytes, [](std::size_t k) { return k; }); i >= 0) {
      held.push_back(kept_[i]);
      kept_.erase(kept_.begin() + i);
    } else {
      held.push_back(bytes);
      hold(bytes);
    }
  }
  return held;
}

void CacheModel::give(const std::vector<std::size_t>& held) {
  kept_.insert(kept_.end(), held.begin(), held.end());
}

}  // namespace gdr
