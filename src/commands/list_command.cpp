// `gdrbench list`: what is built in, and what is usable on this machine.
#include <fmt/format.h>

#include "collectives/test.h"
#include "commands/commands.h"
#include "memory/memory.h"
#include "transports/transport.h"

namespace gdr {
namespace {
std::string status(const std::string& why) { return why.empty() ? "usable" : "not usable: " + why; }
}  // namespace

int list_command() {
  fmt::print("transports:\n");
  for (auto& t : transport_registry()) {
    std::string why = t.unavailable_reason();
    fmt::print("  {:<8} {}\n  {:<8} {}\n", t.name, status(why), "", t.description);
    if (!why.empty()) continue;
    for (MemKind k : mem_kinds()) {
      if (k == MemKind::host) continue;
      std::string device = !t.device_memory_reason ? "decided when a run registers it (gdrbench doctor tells)"
                                                   : status(t.device_memory_reason(k));
      fmt::print("  {:<8} {} memory, direct path: {}\n", "", mem_name(k), device);
    }
  }
  fmt::print("memory kinds:\n");
  for (MemKind k : mem_kinds()) {
    MemoryOps* ops = memory_ops(k);
    fmt::print("  {:<8} {}\n", mem_name(k),
               ops ? status(ops->unavailable_reason()) : "not built into this gdrbench");
  }
  fmt::print("paths (device memory):\n");
  fmt::print("  {:<8} {}\n", "direct", "built in: the transport moves device memory itself");
  fmt::print("  {:<8} {}\n", "staged",
             staging_factory() ? "built in: device -> pinned host -> wire -> pinned host -> device"
                               : "not built into this gdrbench");
  fmt::print("tests:\n");
  for (auto& t : test_registry())
    fmt::print("  {:<10} {}\n", t.name, t.traits.point_to_point() ? "point-to-point" : "collective");
  fmt::print("references (library collectives run beside ours):\n");
  std::vector<std::string> shown;
  for (auto& r : reference_registry()) {
    if (std::find(shown.begin(), shown.end(), r.name) != shown.end()) continue;
    shown.push_back(r.name);
    fmt::print("  {:<8} beside {}\n", r.name, reference_tests(r.name));
  }
  return 0;
}

}  // namespace gdr
