// The doctor checks a verbs run depends on (src/doctor/doctor.h): host memory
// needs locked memory (memlock); device memory direct needs GPUDirect RDMA,
// the RDMA devices and the GPU-to-HCA topology.
#include "src/doctor/doctor.h"

namespace gdr {
namespace {

doctor::Weight verbs_readiness(const doctor::Check& c, bool cuda_direct) {
  if (!cuda_direct) return c.area == "rdma" && c.name == "memlock" ? doctor::Weight::strict : doctor::Weight::ignored;
  return c.area == "gpudirect" || c.area == "rdma" || c.area == "topology" ? doctor::Weight::counts
                                                                            : doctor::Weight::ignored;
}
GDR_REGISTER_READINESS(reg_verbs_readiness, "verbs", verbs_readiness);

}  // namespace
}  // namespace gdr
