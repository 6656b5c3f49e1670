// The UCP context behind the ucx transport, and what this UCX library can
// do (version, where it was loaded from, whether it handles CUDA memory).
//
// A context is shared (shared_ptr) by the transport and every region it
// registered: the runner may destroy a transport before the tests that hold
// its regions, and ucp_mem_unmap needs a live context.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/memory/memory.h"

namespace gdr::ucx {

class Context {
 public:
  // ucp_init with the tag feature, configured from the UCX_* environment.
  // Throws RunError with UCX's status string when it fails.
  static std::shared_ptr<Context> create();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ucp_context_h get() const { return ctx_; }
  // Bit mask of ucs_memory_type_t that this context can move.
  std::uint64_t memory_types() const { return memory_types_; }
  bool supports_cuda() const { return memory_types_ & (1ull << UCS_MEMORY_TYPE_CUDA); }

 private:
  Context() = default;
  ucp_context_h ctx_ = nullptr;
  std::uint64_t memory_types_ = 0;
};

// What a throwaway context found, computed once per process (for `list`,
// transport selection and the CUDA check before any transport exists).
struct Probe {
  std::string error;  // empty when UCX initialized
  bool cuda = false;
  std::uint64_t memory_types = 0;
};
const Probe& probe();

// "1.13.1" from the library actually loaded (not the headers).
std::string version();
// Path of the libucp.so this process loaded, or "" when unknown.
std::string library_path();
// Why `-m cuda --path direct` cannot run on this UCX, naming the fix.
std::string no_cuda_reason();
// "host,cuda,..." for a memory_types mask.
std::string memory_type_names(std::uint64_t mask);
ucs_memory_type_t memory_type(MemKind k);

}  // namespace gdr::ucx
