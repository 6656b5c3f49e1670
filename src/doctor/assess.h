// Internal to the doctor: the judgement, split by area (assess_gpu.cpp,
// assess_net.cpp). Pure functions of Facts.
#pragma once

#include <string>
#include <vector>

#include "doctor/facts.h"

namespace gdr::doctor::detail {

enum class DmaBufState {
  Ok,      // every part confirmed
  Likely,  // nothing refuses, but a part could not be probed (no GPU / no HCA)
  No,      // some part refuses
};
DmaBufState dmabuf_state(const Facts& f, std::string* evidence, std::string* fix);
bool has_gpu_driver(const Facts& f);

void assess_gpu(const Facts& f, std::vector<Check>& out);   // gpu, gpudirect
void assess_net(const Facts& f, std::vector<Check>& out);   // rdma, topology, versions

}  // namespace gdr::doctor::detail
