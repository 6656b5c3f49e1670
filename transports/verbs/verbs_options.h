// User choices for the verbs transport (--hca, --gid-index, --verbs-mode). The transport
// declares those flags itself (verbs_options.cpp, GDR_REGISTER_OPTIONS) and fills these in
// with set_verbs_options() before the run; when none was given, the environment variables
// GDR_VERBS_HCA, GDR_VERBS_GID_INDEX and GDR_VERBS_MODE are read instead.
#pragma once

#include <string>

namespace gdr {

struct VerbsOptions {
  std::string hca;     // "DEV" or "DEV:PORT"; empty: choose automatically
  int gid_index = -1;  // -1: choose automatically (RoCE only)
  int cuda_device = -1;  // this rank's GPU, for the closest HCA; -1: local rank mod count
  std::string mode = "imm";  // --verbs-mode: imm, write or poll (verbs_logic.h: Mode)
};

void set_verbs_options(const VerbsOptions& o);
// The options in force: those set, else the environment's.
VerbsOptions verbs_options();

}  // namespace gdr
