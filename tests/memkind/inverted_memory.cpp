// A memory kind that exists only in this test build: "inverted", host memory
// whose every byte is stored complemented. Nothing but its own operations
// can read it (as nothing but CUDA reads device memory), so a row checks out
// only when the runner, the staged path and the collectives went through
// this table for every byte. GDR_TEST_INVERTED_BROKEN=1 drops the inversion
// from to_host, a bug the checks must catch (tests/memkind/test_memkind.py).
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/datatype.h"
#include "core/errors.h"
#include "memory/memory.h"

namespace gdr::test {
namespace {

void invert(void* dst, const void* src, std::size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<unsigned char>(~s[i]);
}

class InvertedMemory final : public MemoryOps {
 public:
  MemKind kind() const override;
  std::string unavailable_reason() const override { return {}; }
  Buffer alloc(std::size_t bytes) override {
    void* p = std::calloc(std::max<std::size_t>(bytes, 1), 1);
    if (!p) throw OutOfMemoryError("cannot allocate " + std::to_string(bytes) + " B of inverted memory");
    return Buffer{p, bytes, kind(), -1, -1, 0};
  }
  void free(Buffer& b) override {
    std::free(b.ptr);
    b.ptr = nullptr;
  }
  void copy(void* dst, const void* src, std::size_t n) override { std::memmove(dst, src, n); }
  void to_host(void* dst, const void* src, std::size_t n) override {
    if (broken_) std::memcpy(dst, src, n);
    else invert(dst, src, n);
  }
  void from_host(void* dst, const void* src, std::size_t n) override { invert(dst, src, n); }
  void reduce(void* dst, const void* src, std::size_t count, DType t, Op op) override {
    std::vector<unsigned char> a = plain(dst, count * dtype_size(t)), b = plain(src, count * dtype_size(t));
    host().reduce(a.data(), b.data(), count, t, op);
    from_host(dst, a.data(), a.size());
  }
  void fill_input(void* dst, std::size_t count, DType t, Op op, int rank, int it) override {
    std::vector<unsigned char> a(count * dtype_size(t));
    host().fill_input(a.data(), count, t, op, rank, it);
    from_host(dst, a.data(), a.size());
  }
  std::uint64_t count_wrong(const void* buf, std::size_t count, DType t, Op op, int nranks, int it) override {
    return host().count_wrong(plain(buf, count * dtype_size(t)).data(), count, t, op, nranks, it);
  }
  void sync() override {}
  void fill_patterns(void* dst, std::size_t bytes, std::span<const std::uint64_t> seeds) override {
    std::vector<unsigned char> a(bytes * seeds.size());
    host().fill_patterns(a.data(), bytes, seeds);
    from_host(dst, a.data(), a.size());
  }
  std::uint64_t count_wrong_patterns(const void* buf, std::size_t bytes,
                                     std::span<const std::uint64_t> seeds) override {
    return host().count_wrong_patterns(plain(buf, bytes * seeds.size()).data(), bytes, seeds);
  }
  // The staged path's copies between this kind and pinned host memory.
  std::uint64_t copy_async(void* dst, const void* src, std::size_t bytes, CopyDir dir) override {
    if (dir == CopyDir::to_host) to_host(dst, src, bytes);
    else from_host(dst, src, bytes);
    return 0;
  }

 private:
  static MemoryOps& host() { return *memory_ops(MemKind::host); }
  std::vector<unsigned char> plain(const void* src, std::size_t n) {
    std::vector<unsigned char> out(n);
    to_host(out.data(), src, n);
    return out;
  }
  bool broken_ = std::getenv("GDR_TEST_INVERTED_BROKEN") != nullptr;
};

InvertedMemory g_inverted;
const MemKind g_kind = register_memory_kind("inverted", &g_inverted);
MemKind InvertedMemory::kind() const { return g_kind; }

}  // namespace
}  // namespace gdr::test
