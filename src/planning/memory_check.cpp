// The out-of-memory check before a sweep: does what the run will allocate
// fit in each memory kind? Said once, before any timing, as bad input.
#include <fmt/format.h>

#include "memory/memory.h"
#include "planning/plan.h"
#include "core/sizes.h"

namespace gdr {

std::string memory_shortfall(const RunOptions& opt, const MemoryNeed& need, int local_ranks) {
  for (MemKind kind : mem_kinds()) {
    auto it = need.bytes.find(kind);
    std::size_t bytes = it == need.bytes.end() ? 0 : it->second;
    MemoryOps* ops = memory_ops(kind);
    if (bytes == 0 || !ops) continue;
    MemoryOps::Capacity cap = ops->capacity(local_ranks);
    if (bytes <= cap.bytes) continue;
    // The sweep may stop below --maxbytes (-e 100G with -f 2 ends at 64 GiB): name both.
    std::size_t max = opt.sizes.back();
    std::string largest = fmt::format("the largest message, {} B ({})", max, approx_bytes(max));
    if (!opt.maxbytes_text.empty() && parse_size(opt.maxbytes_text, "--maxbytes") != max)
      largest += fmt::format(" under --maxbytes {}", opt.maxbytes_text);
    return fmt::format(
        "{} needs {} of {} memory per rank (the most the run's tests, transports and references "
        "hold at once), more than it can have: {}; lower --maxbytes, or run fewer transports, "
        "references or ranks per node",
        largest, approx_bytes(bytes), mem_name(kind), cap.source);
  }
  return {};
}

}  // namespace gdr
