#include "memory.h"

#include <fmt/format.h>

#include <array>

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

MemoryOps* memory_ops(MemKind k) { return table()[static_cast<int>(k)]; }
void register_memory_ops(MemKind k, MemoryOps* ops) { table()[static_cast<int>(k)] = ops; }

}  // namespace gdr
