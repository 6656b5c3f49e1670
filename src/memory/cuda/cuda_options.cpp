// --device, the CUDA memory kind's option. Built in every gdrbench, with or
// without the kind: the verbs transport picks the HCA closest to this GPU
// even for host memory (cuda_options.h).
#include "cuda_options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/bootstrap.h"
#include "core/component_options.h"
#include "core/errors.h"
#ifdef GDR_HAVE_CUDA
#include "cuda_memory.h"
#endif

namespace gdr::cuda {
namespace {

int g_device = -1;  // as typed; -1: local rank mod the device count

GDR_REGISTER_OPTIONS(reg_cuda_options, ::gdr::ComponentOptions::Owner::memory_kind, "cuda",
    [](CLI::App& run) {
      g_device = -1;
      run.add_option("--device", g_device, "CUDA device for every rank (default: local rank mod count)");
    },
    [] {
      if (g_device < -1) throw UsageError(fmt::format("--device {} must be 0 or more", g_device));
    },
    [](Bootstrap& boot) {
#ifdef GDR_HAVE_CUDA
      // Collective: every rank learns whether ranks share a GPU.
      set_cuda_device_choice(g_device, boot.local_rank(), boot.allreduce_max(boot.local_size()), boot.me());
#else
      (void)boot;
#endif
    });

}  // namespace

int requested_device() { return g_device; }

}  // namespace gdr::cuda
