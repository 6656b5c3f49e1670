#include "memory.h"

#include <fmt/format.h>

#include <array>
#include <chrono>

#include "core/errors.h"

namespace gdr {
namespace {
#define GDR_MEM_KIND_NAME(k) #k,
constexpr std::string_view kNames[] = {GDR_MEM_KINDS(GDR_MEM_KIND_NAME)};
#undef GDR_MEM_KIND_NAME
constexpr std::size_t kKinds = std::size(kNames);

std::array<MemoryOps*, kKinds>& table() {
  static std::array<MemoryOps*, kKinds> t{};
  return t;
}
}  // namespace

std::string_view mem_name(MemKind k) { return kNames[static_cast<std::size_t>(k)]; }

const std::vector<MemKind>& mem_kinds() {
  static const std::vector<MemKind> v = [] {
    std::vector<MemKind> out;
    for (std::size_t i = 0; i < kKinds; ++i) out.push_back(static_cast<MemKind>(i));
    return out;
  }();
  return v;
}

MemKind parse_mem(std::string_view s) {
  std::string names;
  for (MemKind k : mem_kinds()) {
    if (s == mem_name(k)) return k;
    names += (names.empty() ? "" : ", ") + std::string(mem_name(k));
  }
  throw UsageError(fmt::format("unknown memory kind '{}' (use {})", s, names));
}

// Host memory: plain copies one after another, timed by the steady clock.
double MemoryOps::time_copies(void* dst, const void* src, std::size_t bytes, int n, CopyKind k,
                              double /*timeout_s*/) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    if (k == CopyKind::within) copy(dst, src, bytes);
    else if (k == CopyKind::to_host) to_host(dst, src, bytes);
    else from_host(dst, src, bytes);
  }
  sync();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

MemoryOps* memory_ops(MemKind k) { return table()[static_cast<int>(k)]; }
void register_memory_ops(MemKind k, MemoryOps* ops) { table()[static_cast<int>(k)] = ops; }

}  // namespace gdr
