// Which RDMA device, port and GID a rank uses, and the facts about them.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "verbs_options.h"

namespace gdr::verbs {

// An open device with its protection domain; shared by the transport and
// its memory regions so a region may outlive the transport safely.
struct DeviceContext {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ~DeviceContext();
};

struct PortChoice {
  std::string device;
  int port = 0;
  bool ethernet = false;  // RoCE (GID addressing) rather than InfiniBand (LID)
  int gid_index = -1;     // -1 on InfiniBand unless asked for
  ibv_gid gid{};
  std::uint16_t lid = 0;
  int active_mtu = 0;     // IBV_MTU_* enum value
  std::uint32_t max_msg_sz = 0;
  std::string why;        // how it was chosen ("closest to GPU 0000:3b:00.0")
  std::string gpu_hca_path;  // hwloc hops GPU -> HCA, when a GPU was used
};

// Opens the device `opts` names, else the one closest to this rank's GPU
// (hwloc, when a GPU exists), else the first with an ACTIVE port.
// The GPU is opts.cuda_device, else local_rank % device count.
// Throws RunError (prefixed by `who`) when nothing usable exists.
std::shared_ptr<DeviceContext> open_device(const VerbsOptions& opts, int local_rank,
                                           const std::string& who, PortChoice& out);

// Empty when some device has an ACTIVE port, else one line saying why not.
std::string verbs_unavailable_reason();

const char* link_layer_name(bool ethernet);
std::string gid_text(const ibv_gid& g);

}  // namespace gdr::verbs
