// The CUDA memory kind's option (--device), for the components that need to
// know which GPU a rank was told to use (verbs: the HCA closest to it).
#pragma once

namespace gdr::cuda {

// --device as given, -1 when not given (then: local rank mod the device count).
int requested_device();

}  // namespace gdr::cuda
