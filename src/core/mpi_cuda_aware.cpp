// The MPI library's CUDA-awareness probe, in core because two layers ask it:
// the mpi transport (device pointers to MPI_Isend) and the MPI reference row
// (device pointers to MPI_Allreduce). Open MPI built --with-cuda
// says so through MPIX_Query_cuda_support(); Debian's and Ubuntu's are built
// without CUDA (it returns 0) and still move device memory when the active
// PML is ucx and the UCX it loaded has CUDA transports: UCX sees the pointer
// type itself. Any other PML (ob1) would hand device pointers to memcpy and
// crash in opal_convertor_pack, so that case is refused with the reason.
#include "mpi_cuda_aware.h"
#include "launcher.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace gdr::mpi {
namespace {

// Open MPI exports the PML component it selected at MPI_Init. Its header is
// mca_base_component_2_1_0_t: 3 ints, project name[16], 3 ints, framework
// name[32], 3 ints, component name[64]. The project and framework names are
// checked first, so another layout reads as "unknown", never as garbage.
std::string open_mpi_active_pml() {
  const char* c = static_cast<const char*>(dlsym(RTLD_DEFAULT, "mca_pml_base_selected_component"));
  if (!c) return {};
  if (std::strncmp(c + 12, "ompi", 16) != 0 || std::strncmp(c + 40, "pml", 32) != 0) return {};
  return std::string(c + 84, strnlen(c + 84, 64));
}

// The folder of the libucp loaded into this process (by Open MPI's pml ucx or
// by gdrbench's own ucx transport: one soname, one copy).
std::string loaded_ucp_dir() {
  std::string dir;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        std::string_view name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("/libucp.so") == std::string_view::npos) return 0;
        *static_cast<std::string*>(out) = std::string(name.substr(0, name.rfind('/')));
        return 1;
      },
      &dir);
  return dir;
}

// A UCX built with CUDA has the cuda_copy/cuda_ipc module, libuct_cuda, in
// its module folder (UCX_MODULE_DIR overrides where UCX looks).
bool ucx_has_cuda(const std::string& ucp_dir, std::string& where) {
  const char* env = std::getenv("UCX_MODULE_DIR");
  where = env && *env ? env : ucp_dir + "/ucx";
  std::error_code ec;
  for (const char* f : {"libuct_cuda.so.0", "libuct_cuda.so"})
    if (std::filesystem::exists(where + "/" + f, ec)) return true;
  return false;
}

CudaAwareness probe() {
  CudaAwareness a;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    a.how = "not known before MPI_Init";
    return a;
  }
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT)
  int query = MPIX_Query_cuda_support();
  a.pml = open_mpi_active_pml();
  std::string pml = a.pml.empty() ? "unknown" : a.pml;
  if (query == 1) {
    a.aware = a.collectives = true;
    a.how = fmt::format("Open MPI built with CUDA (MPIX_Query_cuda_support() = 1), pml {}", pml);
    return a;
  }
  if (a.pml == "ucx") {
    std::string ucp = loaded_ucp_dir(), modules;
    if (!ucp.empty() && ucx_has_cuda(ucp, modules)) {
      a.aware = true;
      a.how = fmt::format("through pml ucx: its UCX ({}) has CUDA transports ({}/libuct_cuda); Open "
                          "MPI itself is built without CUDA (MPIX_Query_cuda_support() = 0)",
                          ucp, modules);
    } else {
      a.how = fmt::format("pml ucx, but the UCX it loaded ({}) has no CUDA transports (no libuct_cuda "
                          "in {}): put a UCX built with CUDA first on LD_LIBRARY_PATH, or use --path staged",
                          ucp.empty() ? "not found" : ucp, modules.empty() ? "its module folder" : modules);
    }
    return a;
  }
  a.how = fmt::format("Open MPI built without CUDA (MPIX_Query_cuda_support() = 0) and its active PML is "
                      "{}, which would crash on device pointers; run with --mca pml ucx and a UCX built "
                      "with CUDA first on LD_LIBRARY_PATH, or use --path staged", pml);
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  // MPICH 4 and its derivatives (Cray MPICH, MVAPICH 3, Intel MPI 2021.11+).
  int ok = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &ok) == MPI_SUCCESS && ok) {
    a.aware = a.collectives = true;
    a.how = "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) = 1";
  } else {
    a.how = "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) = 0 (Cray MPICH: MPICH_GPU_SUPPORT_ENABLED=1; "
            "MVAPICH: MVAPICH_ENABLE_CUDA=1); or use --path staged";
  }
#else
  a.how = "this MPI has no CUDA query (neither MPIX_Query_cuda_support nor MPIX_GPU_query_support); "
          "use --path staged";
#endif
  return a;
}

}  // namespace

const CudaAwareness& cuda_awareness() {
  static CudaAwareness a;
  static bool probed = false;
  if (!probed) {
    a = probe();
    int initialized = 0;
    MPI_Initialized(&initialized);
    probed = initialized;  // before MPI_Init the answer is not known yet
  }
  return a;
}

std::string device_memory_reason_for_list() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  // Under a launcher MPI_Init is cheap and safe, and names the PML this
  // launch picks. Alone, a singleton init would start Open MPI's runtime (and
  // refuse root): say what the headers tell instead.
  bool launched = launcher::by_mpi();
  if (!initialized && !finalized && launched) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return "not known: MPI_Init failed";
    std::atexit([] { MPI_Finalize(); });
    initialized = 1;
  }
  if (initialized) {
    const CudaAwareness& a = cuda_awareness();
    return a.aware ? std::string() : cuda_awareness_line();
  }
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT)
  if (MPIX_CUDA_AWARE_SUPPORT) return {};
  return "not CUDA-aware unless MPI_Init picks pml ucx over a UCX built with CUDA: Open MPI built "
         "without CUDA (MPIX_CUDA_AWARE_SUPPORT = 0); `mpirun -np 1 [--mca pml ucx] gdrbench list` "
         "tells for that launch";
#else
  return "not known before MPI_Init: `mpirun -np 1 gdrbench list` tells";
#endif
}

std::string cuda_awareness_line() {
  const CudaAwareness& a = cuda_awareness();
  return fmt::format("{}: {}", a.aware ? "CUDA-aware" : "not CUDA-aware", a.how);
}

}  // namespace gdr::mpi
