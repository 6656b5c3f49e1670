// Versions of the communication libraries, and whether they handle CUDA
// memory: UCX (opened at run time; memory types from ucp_context_query when
// its headers were there at build time), the MPI library gdrbench links,
// NCCL where present.
#include <fmt/format.h>
#include <mpi.h>

#include <filesystem>

#include "core/shared_library.h"
#include "doctor/facts.h"

#if defined(GDR_HAVE_UCX) || __has_include(<ucp/api/ucp.h>)
#include <ucp/api/ucp.h>
#define GDR_DOCTOR_UCX_TYPES 1
#endif

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace gdr::doctor::detail {
namespace {

void probe_ucx(VersionSide& v) {
  SharedLibrary ucp{"libucp.so.0"};
  if (!ucp) {
    v.ucx_error = "UCX not loadable: " + ucp.error();
    return;
  }
  auto version = ucp.sym<const char* (*)()>("ucp_get_version_string");
  v.ucx_version = version ? version() : "unknown";
  v.ucx_lib_dir = std::filesystem::path(ucp.path("ucp_get_version_string")).parent_path().string();
  v.ucx_device_api_symbol = ucp.sym<void*>("ucp_device_remote_mem_list_create") ? 1 : 0;
#ifdef GDR_DOCTOR_UCX_TYPES
  auto init = ucp.sym<ucs_status_t (*)(unsigned, unsigned, const ucp_params_t*,
                                       const ucp_config_t*, ucp_context_h*)>("ucp_init_version");
  auto query = ucp.sym<ucs_status_t (*)(ucp_context_h, ucp_context_attr_t*)>("ucp_context_query");
  auto cleanup = ucp.sym<void (*)(ucp_context_h)>("ucp_cleanup");
  if (!init || !query || !cleanup) {
    v.ucx_error = "libucp lacks ucp_init_version/ucp_context_query";
    return;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
  ucp_context_h ctx = nullptr;
  if (ucs_status_t st = init(UCP_API_MAJOR, UCP_API_MINOR, &params, nullptr, &ctx); st != UCS_OK) {
    v.ucx_error = fmt::format("ucp_init failed (status {})", static_cast<int>(st));
    return;
  }
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (query(ctx, &attr) == UCS_OK) {
    static const char* names[] = {"host", "cuda", "cuda-managed", "rocm", "rocm-managed",
                                  "rdma", "ze-host", "ze-device", "ze-managed"};
    for (unsigned i = 0; i < 64; ++i) {
      if (!((attr.memory_types >> i) & 1)) continue;
      if (!v.ucx_memory_types.empty()) v.ucx_memory_types += ", ";
      v.ucx_memory_types += i < std::size(names) ? names[i] : fmt::format("type{}", i);
    }
    v.ucx_cuda = (attr.memory_types >> 1) & 1;  // UCS_MEMORY_TYPE_CUDA
  }
  cleanup(ctx);
#else
  v.ucx_error = "built without UCX headers: CUDA support not queried";
#endif
  if (v.ucx_cuda != 1) {
    // Is the CUDA module installed but unable to load (no driver)?
    std::error_code ec;
    auto dir = std::filesystem::path(ucp.path("ucp_get_version_string")).parent_path() / "ucx";
    if (std::filesystem::exists(dir / "libuct_cuda.so.0", ec) ||
        std::filesystem::exists(dir / "libuct_cuda.so", ec))
      v.ucx_error = fmt::format("{}/libuct_cuda.so is installed but CUDA memory is not offered "
                                "(CUDA driver missing?)",
                                dir.string());
  }
}

void probe_mpi(VersionSide& v) {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) == MPI_SUCCESS) {  // allowed before MPI_Init
    std::string s(buf, static_cast<size_t>(std::max(0, len)));
    auto cut = s.find_first_of(",\n");
    v.mpi_version = s.substr(0, cut);
  }
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    v.mpi_cuda = MPIX_Query_cuda_support() ? 1 : 0;
    v.mpi_cuda_evidence = fmt::format("MPIX_Query_cuda_support() = {}", v.mpi_cuda);
  } else {
    v.mpi_cuda = MPIX_CUDA_AWARE_SUPPORT ? 1 : 0;
    v.mpi_cuda_evidence = fmt::format("MPIX_CUDA_AWARE_SUPPORT = {}", MPIX_CUDA_AWARE_SUPPORT);
  }
#else
  v.mpi_cuda_evidence = "this MPI does not say whether it is CUDA-aware";
#endif
}

void probe_nccl(VersionSide& v) {
  SharedLibrary nccl{"libnccl.so.2"};
  if (!nccl) {
    v.nccl_error = "libnccl.so.2 not loadable";
    return;
  }
  auto get = nccl.sym<int (*)(int*)>("ncclGetVersion");
  int code = 0;
  if (!get || get(&code) != 0) {
    v.nccl_error = "ncclGetVersion failed";
    return;
  }
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, before
  // that major*1000 + minor*100 + patch.
  if (code >= 10000)
    v.nccl_version = fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  else
    v.nccl_version = fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  auto path = nccl.path("ncclGetVersion");
  if (!path.empty()) v.nccl_version += " (" + path + ")";
}

}  // namespace

VersionSide probe_versions(const Options& o) {
  VersionSide v;
  probe_mpi(v);
  if (o.probe_libraries) {
    probe_ucx(v);
    probe_nccl(v);
  } else {
    v.ucx_error = v.nccl_error = "libraries not probed";
  }
  return v;
}

}  // namespace gdr::doctor::detail
