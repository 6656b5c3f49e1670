// Whether CUDA MPS serves this node's GPUs: several ranks on one
// GPU without MPS time-slice it, and every device operation may wait for a
// context switch (~150 us on an H200: 8 B device latency 154 us without
// MPS, 15-18 us with it).
#pragma once

#include <string>

namespace gdr {

// The MPS control daemon's socket: $CUDA_MPS_PIPE_DIRECTORY/control, else
// /tmp/nvidia-mps/control (nvidia-cuda-mps-control's default), under
// `root` (tests point it at a fake tree). Empty when there is none, else
// the socket's path.
std::string mps_control_socket(const std::string& root = "");

// The run file's `cuda.mps` fact: "on: ..." / "off: ..." / "unclear: ...",
// one line naming what was seen: a running nvidia-cuda-mps-control (a /proc
// scan of process names) and its control socket (mps_control_socket), which
// is where a CUDA process looks for MPS when it creates its context. Read
// only: nothing is started or connected to.
std::string mps_state();

}  // namespace gdr
