// The verbs transport's settings: --hca, --gid-index, --verbs-mode and their
// environment twins, and the measuring switches (GDR_VERBS_*), declared once
// in verbs_options.cpp with one parser each. The transport reads them from
// the run's Settings when it is created (verbs_transport.cpp).
#pragma once

#include <optional>
#include <string>

namespace gdr {

struct VerbsOptions {
  std::string hca;     // "DEV" or "DEV:PORT"; empty: choose automatically
  int gid_index = -1;  // -1: choose automatically (RoCE only)
  int cuda_device = -1;  // this rank's GPU (--device), for the closest HCA; -1: local rank mod count
  std::string mode = "imm";  // --verbs-mode: imm, write or poll (verbs_logic.h: Mode)
  std::string wait;          // poll or event; empty: by device and mode (verbs_connect.cpp)
  // The fast paths, on by default; 0 turns one off to measure what it gives.
  int inline_sends = 1, eager = 1, postlist = 1, recv_batch = 1;
  int signal_every = 32;  // a send completion asked every N work requests: send queue / 8
  // Unset: chosen by device (and mode) in verbs_connect.cpp.
  std::optional<int> yield, retry_cnt, qp_timeout;
};

}  // namespace gdr
