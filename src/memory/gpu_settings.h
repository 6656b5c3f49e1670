// --device, the GPU each rank was told to use: declared by the CUDA memory
// kind (cuda/cuda_options.cpp) and read, through the run's Settings, by the
// components that care which GPU a rank uses (verbs: the HCA closest to it).
// A memory-layer struct, so that no transport includes the cuda folder.
#pragma once

namespace gdr {

struct GpuSettings {
  int device = -1;  // -1: local rank mod the device count
};

}  // namespace gdr
