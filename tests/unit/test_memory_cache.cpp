// The buffer cache between lanes (src/memory/memory_cache.h) over real host memory.
#include <gtest/gtest.h>

#include "src/memory/memory_cache.h"

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

namespace gdr {
namespace {

// The model the out-of-memory check replays must match CachedMemory: the
// same sizes taken and given back in the same order give the same peak.
TEST(CacheModel, PeakMatchesTheCacheOverRealBuffers) {
  const std::vector<std::vector<std::size_t>> lanes_a = {{100 << 10, 50 << 10}, {100 << 10, 50 << 10}};
  const std::vector<std::vector<std::size_t>> lanes_b = {{100 << 10, 100 << 10, 64}, {100 << 10, 100 << 10, 64}};
  CacheModel model;
  CachedMemory cache(host());
  std::size_t held = 0, peak = 0;
  auto run_block = [&](const std::vector<std::vector<std::size_t>>& lanes) {
    std::vector<std::vector<std::size_t>> taken;
    std::vector<Buffer> bufs;
    for (const auto& sizes : lanes) {
      taken.push_back(model.take(sizes));
      for (std::size_t n : sizes) {
        std::size_t kept_before = cache.kept_bytes();
        bufs.push_back(cache.alloc(n));
        if (cache.kept_bytes() == kept_before) held += n;  // a new allocation
        peak = std::max(peak, held);
      }
    }
    for (auto& t : taken) model.give(t);
    for (auto& b : bufs) cache.free(b);
  };
  run_block(lanes_a);  // ring allreduce at 4 ranks over two transports: work + smaller scratch
  run_block(lanes_b);  // then p2p: the scratch fits only the ack; two more full buffers
  EXPECT_EQ(model.peak(), peak);
  EXPECT_EQ(model.peak(), std::size_t{500} << 10);  // not max(300, 400) KiB: the scratch stays kept
}

TEST(CacheModel, PinnedMemoryBesideIsHeldNotCached) {
  CacheModel m;
  m.hold(10);
  m.drop(10);
  auto held = m.take({5});
  EXPECT_EQ(held, std::vector<std::size_t>{5});
  EXPECT_EQ(m.peak(), 10u);
}

}  // namespace
}  // namespace gdr
