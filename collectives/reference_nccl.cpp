// Reference row: NCCL's own ncclAllReduce on the same device buffers,
// inputs and checks as our ring (timed_allreduce_loop), so the two rows
// compare like for like.
#include "nccl_api.h"
#include "src/doctor/doctor.h"
#include "test.h"
#include "timed_loop.h"

namespace gdr {
namespace {

class NcclAllreduce final : public Test {
 public:
  // Collective: every rank builds the communicator with the id rank 0 made.
  void prepare(TestEnv& env, std::size_t max_bytes) override {
    work_ = UniqueBuffer(&env.mem, max_bytes);  // also makes this rank's GPU current
    comm_.init(env);
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    return timed_allreduce_loop(env, c, work_.data(), [&] {
      comm_.check(env,
                  nccl::Api::get().all_reduce(work_.data(), work_.data(), c.count, nccl::type_of(c.dtype),
                                              nccl::op_of(c.op), comm_.comm(), comm_.stream()),
                  "ncclAllReduce");
      comm_.wait(env, "ncclAllReduce");
    });
  }

 private:
  UniqueBuffer work_;
  nccl::Communicator comm_;  // destroyed before the buffer it used
};

std::string cannot_run(const CaseParams& c) { return nccl::cannot_run(c.mem, c.path); }

GDR_REGISTER_REFERENCE(reg_nccl_ref, "nccl", "allreduce", cannot_run,
                       [] { return std::make_unique<NcclAllreduce>(); },
                       [](std::size_t max, int) { return Footprint{{max}, 0}; });
// Without an NCCL to load (versions/nccl n/a) the row cannot run.
GDR_REGISTER_READINESS(reg_nccl_readiness, "nccl", [](const doctor::Check& c, bool cuda_direct) {
  return cuda_direct && c.area == "versions" && c.name == "nccl" && c.status == "n/a" ? doctor::Weight::blocks
                                                                                       : doctor::Weight::ignored;
});

}  // namespace
}  // namespace gdr
