// The out-of-memory check before a sweep: does what the run will allocate
// fit in each memory kind? Said once, before any timing, as bad input.
#include <fmt/format.h>

#include "memory.h"
#include "runner.h"
#include "sizes.h"

namespace gdr {

std::string memory_shortfall(const RunOptions& opt, const MemoryNeed& need, int local_ranks) {
  for (MemKind kind : {MemKind::host, MemKind::cuda}) {
    std::size_t bytes = kind == MemKind::host ? need.host : need.cuda;
    MemoryOps* ops = memory_ops(kind);
    if (bytes == 0 || !ops) continue;
    MemoryOps::Capacity cap = kind == MemKind::host ? host_capacity(local_ranks) : ops->capacity(local_ranks);
    if (bytes <= cap.bytes) continue;
    std::size_t max = opt.sizes.back();
    return fmt::format(
        "--maxbytes {} B ({}) needs {} of {} memory per rank (the buffers of every test, transport "
        "and reference of the run, kept to its end), more than it can have: {}; lower --maxbytes "
        "or run fewer tests, transports or ranks per node",
        max, approx_bytes(max), approx_bytes(bytes), mem_name(kind), cap.source);
  }
  return {};
}

}  // namespace gdr
