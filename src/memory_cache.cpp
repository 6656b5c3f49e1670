#include "memory_cache.h"

#include <algorithm>
#include <iterator>

namespace gdr {

Buffer CachedMemory::alloc(std::size_t bytes) {
  auto fits = [&](const Buffer& b) { return b.bytes >= bytes; };
  auto best = kept_.end();
  for (auto it = kept_.begin(); it != kept_.end(); ++it)
    if (fits(*it) && (best == kept_.end() || it->bytes < best->bytes)) best = it;
  Buffer b;
  if (best != kept_.end()) {
    b = *best;
    kept_.erase(best);
  } else {
    try {
      b = real_.alloc(bytes);
    } catch (const OutOfMemoryError&) {
      if (kept_.empty()) throw;
      release();  // what is kept does not fit this request: give it back and try once more
      b = real_.alloc(bytes);
    }
  }
  lent_.push_back(b);
  b.bytes = bytes;  // a transport registers what was asked for
  return b;
}

void CachedMemory::free(Buffer& b) {
  auto it = std::find_if(lent_.begin(), lent_.end(), [&](const Buffer& l) { return l.ptr == b.ptr; });
  if (it == lent_.end()) {
    real_.free(b);  // not ours: never happens, but do not leak
    return;
  }
  kept_.push_back(*it);
  lent_.erase(it);
  b.ptr = nullptr;
}

void CachedMemory::release() {
  for (Buffer& b : kept_) real_.free(b);
  kept_.clear();
}

std::size_t CachedMemory::kept_bytes() const {
  std::size_t n = 0;
  for (const Buffer& b : kept_) n += b.bytes;
  return n;
}

}  // namespace gdr
