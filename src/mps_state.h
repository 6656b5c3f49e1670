// Whether CUDA MPS serves this node's GPU processes, as the run file records it.
#pragma once

#include <string>

namespace gdr {

// "on: ..." / "off: ..." / "unclear: ...", one line naming what was seen:
// a running nvidia-cuda-mps-control (a /proc scan of process names) and its
// control socket in CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps), which
// is where a CUDA process looks for MPS when it creates its context. Read
// only: nothing is started or connected to.
std::string mps_state();

}  // namespace gdr
