// The UCX transport's settings, declared with their parsers in
// ucx_transport.cpp (GDR_REGISTER_OPTIONS) and read from the run's Settings.
#pragma once

#include "send_cap.h"

namespace gdr {

struct UcxSettings {
  // GDR_UCX_CUDA_MAX_SENDS: device-memory sends in flight per peer (0: no cap).
  int cuda_max_sends = ucx::SendCap::kDefault;
  // GDR_UCX_PASS_MEMH: pass the registration handle on operations.
  int pass_memh = 0;
  // GDR_UCX_LATENCY_PREPOST: the latency test posts its batch of receives
  // ahead (1) or each when osu_latency and tag_lat do (0, the default: 64
  // posted ahead cost 8 B device latency ~5 % under MPS on the H200, UCX
  // 1.22, 4 of 4 ABBA rounds; results/archive/20261204_h200_ucx122-mps-prepost-window-probe.txt).
  int latency_prepost = 0;
};

}  // namespace gdr
