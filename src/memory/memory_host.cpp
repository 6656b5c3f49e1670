// The host memory kind: page-aligned malloc and the reduction loops.
#include <fmt/format.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "exact_inputs.h"
#include "host_reduce.h"
#include "memory.h"
#include "payload_pattern.h"
#include "core/sizes.h"

namespace gdr::host {

void reduce(void* dst, const void* src, std::size_t count, DType t, Op op) {
  dispatch(t, [&]<DType T>() {
    using V = typename Elem<T>::type;
    auto* d = static_cast<V*>(dst);
    auto* s = static_cast<const V*>(src);
    switch (op) {
      case Op::sum: reduce_loop<Op::sum>(d, s, count); break;
      case Op::prod: reduce_loop<Op::prod>(d, s, count); break;
      case Op::min: reduce_loop<Op::min>(d, s, count); break;
      case Op::max: reduce_loop<Op::max>(d, s, count); break;
    }
  });
}

void fill_input(void* dst, std::size_t count, DType t, Op op, int rank, int it) {
  dispatch(t, [&]<DType T>() {
    using V = typename Elem<T>::type;
    V table[exact::kPeriod];
    for (int p = 0; p < exact::kPeriod; ++p)
      table[p] = from_double<V>(exact::input_at_phase(static_cast<int>(op), p, rank));
    auto* d = static_cast<V*>(dst);
    for (std::size_t i = 0; i < count; ++i) d[i] = table[exact::phase(i, it)];
  });
}

std::uint64_t count_wrong(const void* buf, std::size_t count, DType t, Op op, int nranks, int it) {
  return dispatch(t, [&]<DType T>() -> std::uint64_t {
    using V = typename Elem<T>::type;
    double table[exact::kPeriod];
    for (int p = 0; p < exact::kPeriod; ++p)
      table[p] = exact::expected_at_phase(static_cast<int>(op), p, nranks);
    auto* b = static_cast<const V*>(buf);
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i)
      wrong += to_double(b[i]) != table[exact::phase(i, it)];
    return wrong;
  });
}

// Whole words through memcpy (a message may start anywhere), then the tail.
void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed) {
  auto* d = static_cast<unsigned char*>(dst);
  const std::size_t words = bytes / 8;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t v = pattern::word(seed, w);
    std::memcpy(d + 8 * w, &v, 8);
  }
  for (std::size_t i = 8 * words; i < bytes; ++i) d[i] = pattern::byte_at(seed, i);
}

std::uint64_t count_wrong_pattern(const void* buf, std::size_t bytes, std::uint64_t seed) {
  const auto* b = static_cast<const unsigned char*>(buf);
  const std::size_t words = bytes / 8;
  std::uint64_t wrong = 0;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t v;
    std::memcpy(&v, b + 8 * w, 8);
    if (std::uint64_t x = v ^ pattern::word(seed, w))
      for (int k = 0; k < 8; ++k) wrong += ((x >> (8 * k)) & 0xffu) != 0;
  }
  for (std::size_t i = 8 * words; i < bytes; ++i) wrong += b[i] != pattern::byte_at(seed, i);
  return wrong;
}

namespace {

class HostMemory final : public MemoryOps {
 public:
  MemKind kind() const override { return MemKind::host; }
  std::string unavailable_reason() const override { return {}; }
  Buffer alloc(std::size_t bytes) override {
    std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, rounded);
    if (!p)
      throw OutOfMemoryError(fmt::format("cannot allocate {} B ({}) of host memory: aligned_alloc failed",
                                         bytes, approx_bytes(bytes)));
    std::memset(p, 0, rounded);  // touch every page now, not inside a timed loop
    return Buffer{p, bytes, MemKind::host, -1, -1, 0};
  }
  void free(Buffer& b) override {
    std::free(b.ptr);
    b.ptr = nullptr;
  }
  void copy(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void to_host(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void from_host(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void reduce(void* dst, const void* src, std::size_t count, DType t, Op op) override {
    host::reduce(dst, src, count, t, op);
  }
  void fill_input(void* dst, std::size_t count, DType t, Op op, int rank, int it) override {
    host::fill_input(dst, count, t, op, rank, it);
  }
  std::uint64_t count_wrong(const void* buf, std::size_t count, DType t, Op op, int nranks,
                            int it) override {
    return host::count_wrong(buf, count, t, op, nranks, it);
  }
  void sync() override {}
  void fill_patterns(void* dst, std::size_t bytes, std::span<const std::uint64_t> seeds) override {
    for (std::size_t k = 0; k < seeds.size(); ++k) host::fill_pattern(static_cast<char*>(dst) + k * bytes, bytes, seeds[k]);
  }
  std::uint64_t count_wrong_patterns(const void* buf, std::size_t bytes,
                                     std::span<const std::uint64_t> seeds) override {
    std::uint64_t wrong = 0;
    for (std::size_t k = 0; k < seeds.size(); ++k)
      wrong += host::count_wrong_pattern(static_cast<const char*>(buf) + k * bytes, bytes, seeds[k]);
    return wrong;
  }
  Capacity capacity(int local_ranks) override { return host_capacity(local_ranks); }
};

HostMemory g_host;
[[maybe_unused]] const bool g_registered = (register_memory_ops(MemKind::host, &g_host), true);

}  // namespace
}  // namespace gdr::host

namespace gdr {

MemoryOps::Capacity host_capacity(int local_ranks) {
  MemoryOps::Capacity c;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream in(line);
    std::string key;
    std::size_t kib = 0;
    if (in >> key >> kib && key == "MemAvailable:") {
      int n = std::max(local_ranks, 1);
      c.bytes = kib * 1024 / n;
      c.source = n == 1 ? fmt::format("MemAvailable {} (/proc/meminfo)", approx_bytes(kib * 1024))
                        : fmt::format("MemAvailable {} (/proc/meminfo) shared by {} ranks on this node",
                                      approx_bytes(kib * 1024), n);
    }
  }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::size_t used_pages = 0;
    std::ifstream("/proc/self/statm") >> used_pages;
    std::size_t used = used_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t left = as.rlim_cur > used ? as.rlim_cur - used : 0;
    if (left < c.bytes) {
      c.bytes = left;
      c.source = fmt::format("RLIMIT_AS (ulimit -v) {} with {} already mapped", approx_bytes(as.rlim_cur),
                             approx_bytes(used));
    }
  }
  return c;
}

}  // namespace gdr
