// The buffer cache between lanes (src/memory_cache.h) over real host memory.
#include <gtest/gtest.h>

#include "src/memory_cache.h"

namespace gdr {
namespace {

MemoryOps& host() { return *memory_ops(MemKind::host); }

TEST(MemoryCache, AFreedBufferIsReusedForTheSameOrASmallerSize) {
  CachedMemory m(host());
  Buffer a = m.alloc(1 << 20);
  void* p = a.ptr;
  m.free(a);
  EXPECT_EQ(a.ptr, nullptr);
  EXPECT_EQ(m.kept_bytes(), std::size_t{1} << 20);
  Buffer b = m.alloc(1000);
  EXPECT_EQ(b.ptr, p);
  EXPECT_EQ(b.bytes, 1000u);  // what was asked for, for registration
  EXPECT_EQ(m.kept_bytes(), 0u);
  m.free(b);
  EXPECT_EQ(m.kept_bytes(), std::size_t{1} << 20);  // the whole allocation comes back
}

TEST(MemoryCache, TheSmallestKeptBufferThatFitsIsTaken) {
  CachedMemory m(host());
  Buffer big = m.alloc(4 << 20), small = m.alloc(1 << 20);
  void* small_ptr = small.ptr;
  m.free(big);
  m.free(small);
  Buffer b = m.alloc(512 << 10);
  EXPECT_EQ(b.ptr, small_ptr);
  Buffer c = m.alloc(8 << 20);  // nothing kept is large enough: a new one
  EXPECT_NE(c.ptr, nullptr);
  EXPECT_EQ(m.kept_bytes(), std::size_t{4} << 20);
  m.free(b);
  m.free(c);
  m.release();
  EXPECT_EQ(m.kept_bytes(), 0u);
}

TEST(MemoryCache, BuffersInUseAreNeverHandedOutTwice) {
  CachedMemory m(host());
  Buffer a = m.alloc(4096), b = m.alloc(4096);
  EXPECT_NE(a.ptr, b.ptr);
  m.free(a);
  Buffer c = m.alloc(4096);
  EXPECT_NE(c.ptr, b.ptr);
  m.free(b);
  m.free(c);
}

}  // namespace
}  // namespace gdr
