#include "memory.h"

#include <fmt/format.h>

#include <array>
#include <chrono>

#include "errors.h"

namespace gdr {
namespace {
std::array<MemoryOps*, 2>& table() {
  static std::array<MemoryOps*, 2> t{};
  return t;
}
}  // namespace

std::string_view mem_name(MemKind k) { return k == MemKind::host ? "host" : "cuda"; }

MemKind parse_mem(std::string_view s) {
  if (s == "host") return MemKind::host;
  if (s == "cuda") return MemKind::cuda;
  throw UsageError(fmt::format("unknown memory kind '{}' (use host, cuda)", s));
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
