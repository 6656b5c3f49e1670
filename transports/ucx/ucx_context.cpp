#include "ucx_context.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>

#include "src/core/errors.h"

namespace gdr::ucx {

std::shared_ptr<Context> Context::create() {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    throw RunError(fmt::format("UCX: reading the UCX_* configuration failed: {}",
                               ucs_status_string(st)));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_REQUEST_SIZE;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 0;  // one worker, driven by the one thread that runs the tests
  params.request_size = 0;       // requests are polled, never extended
  std::shared_ptr<Context> c(new Context);
  st = ucp_init(&params, config, &c->ctx_);
  ucp_config_release(config);
  if (st != UCS_OK)
    throw RunError(fmt::format("UCX {}: ucp_init failed: {}", version(), ucs_status_string(st)));
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  st = ucp_context_query(c->ctx_, &attr);
  if (st != UCS_OK)
    throw RunError(fmt::format("UCX {}: ucp_context_query failed: {}", version(),
                               ucs_status_string(st)));
  c->memory_types_ = attr.memory_types;
  return c;
}

Context::~Context() {
  if (ctx_) ucp_cleanup(ctx_);
}

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    try {
      auto c = Context::create();
      r.cuda = c->supports_cuda();
      r.memory_types = c->memory_types();
    } catch (const RunError& e) {
      r.error = e.what();
    }
    return r;
  }();
  return p;
}

std::string version() { return ucp_get_version_string(); }

std::string library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ucp_get_version_string), &info) == 0 || !info.dli_fname)
    return {};
  std::error_code ec;
  auto p = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : p.string();
}

// UCX loads its CUDA support as a module from <libdir>/ucx/. Whether that
// module exists tells "built without CUDA" apart from "built with CUDA but
// no GPU/driver here", which need different fixes.
std::string no_cuda_reason() {
  const std::string lib = library_path();
  const std::string where = lib.empty() ? version() : fmt::format("{} at {}", version(), lib);
  std::filesystem::path module;
  if (!lib.empty()) module = std::filesystem::path(lib).parent_path() / "ucx" / "libuct_cuda.so.0";
  std::error_code ec;
  if (!module.empty() && std::filesystem::exists(module, ec))
    return fmt::format(
        "this UCX ({}) has CUDA support ({}) but did not enable CUDA memory: no GPU or CUDA "
        "driver (libcuda.so.1) here, or UCX_TLS excludes cuda_copy",
        where, module.string());
  return fmt::format(
      "this UCX ({}) was built without CUDA; use a UCX configured --with-cuda (build gdrbench "
      "with -DUCX_ROOT=<its prefix> and put <its prefix>/lib first on LD_LIBRARY_PATH; see "
      "transports/ucx/README.md)",
      where);
}

std::string memory_type_names(std::uint64_t mask) {
  std::string out;
  for (int t = 0; t < UCS_MEMORY_TYPE_LAST; ++t)
    if (mask & (1ull << t)) out += (out.empty() ? "" : ",") + std::string(ucs_memory_type_names[t]);
  return out;
}

ucs_memory_type_t memory_type(MemKind k) {
  return k == MemKind::cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

}  // namespace gdr::ucx
