#include "memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>

#include "core/errors.h"

namespace gdr {
namespace {
struct Kind {
  std::string name;
  MemoryOps* ops = nullptr;
};
// Indexed by MemKind; a deque, so that names handed out stay put when a
// kind registers later.
std::deque<Kind>& table() {
  static std::deque<Kind> t{{"host"}, {"cuda"}};
  return t;
}
std::vector<MemKind>& listed() {
  static std::vector<MemKind> v{MemKind::host, MemKind::cuda};
  return v;
}
Kind& entry(MemKind k) { return table().at(static_cast<std::size_t>(k)); }
}  // namespace

std::string_view mem_name(MemKind k) { return entry(k).name; }

const std::vector<MemKind>& mem_kinds() { return listed(); }

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

MemoryOps* memory_ops(MemKind k) { return entry(k).ops; }
void register_memory_ops(MemKind k, MemoryOps* ops) { entry(k).ops = ops; }

MemKind register_memory_kind(std::string_view name, MemoryOps* ops) {
  for (MemKind k : listed())
    if (mem_name(k) == name) {
      register_memory_ops(k, ops);
      return k;
    }
  const auto k = static_cast<MemKind>(table().size());
  table().push_back({std::string(name), ops});
  // After host and cuda, by name: the order does not hang on link order.
  auto at = std::upper_bound(listed().begin() + 2, listed().end(), k,
                             [](MemKind a, MemKind b) { return mem_name(a) < mem_name(b); });
  listed().insert(at, k);
  return k;
}

}  // namespace gdr
