// --device, the CUDA memory kind's setting (memory/gpu_settings.h). Built in
// every gdrbench, with or without the kind: the verbs transport picks the
// HCA closest to this GPU even for host memory.
#include "core/bootstrap.h"
#include "core/component_options.h"
#include "memory/gpu_settings.h"
#ifdef GDR_HAVE_CUDA
#include "cuda_memory.h"
#endif

namespace gdr::cuda {
namespace {

GDR_REGISTER_OPTIONS(reg_cuda_options, declare_options<GpuSettings>(ComponentOptions::Owner::memory_kind, "cuda", {
    {{"--device", "", "CUDA device for every rank (default: local rank mod count)", "", "INT"},
     setting::whole(&GpuSettings::device, 0, 1'000'000)},
  },
  [](const GpuSettings& s, Bootstrap& boot) {
#ifdef GDR_HAVE_CUDA
    // Collective: every rank learns whether ranks share a GPU.
    set_cuda_device_choice(s.device, boot.local_rank(), boot.allreduce_max(boot.local_size()), boot.me());
#else
    (void)s, (void)boot;
#endif
  }));

}  // namespace
}  // namespace gdr::cuda
