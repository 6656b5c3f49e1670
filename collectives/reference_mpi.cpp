// Reference row: the MPI library's own MPI_Allreduce on the same buffers,
// inputs and checks as ours, so the two rows compare like for like.
#include <fmt/format.h>
#include <mpi.h>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/core/signals.h"
#include "src/core/wait_loop.h"
#include "test.h"
#include "src/core/mpi_cuda_aware.h"
#include "timed_loop.h"

namespace gdr {
namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(Op o) {
  switch (o) {
    case Op::sum: return MPI_SUM;
    case Op::prod: return MPI_PROD;
    case Op::min: return MPI_MIN;
    case Op::max: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

class MpiAllreduce final : public Test {
 public:
  void prepare(TestEnv& env, std::size_t max_bytes) override {
    work_ = UniqueBuffer(&env.mem, max_bytes);
  }
  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    return timed_allreduce_loop(env, c, work_.data(), [&] {
      // Non-blocking so the wait honours --timeout like every other wait.
      MPI_Request req;
      int rc = MPI_Iallreduce(MPI_IN_PLACE, work_.data(), static_cast<int>(c.count),
                              mpi_type(c.dtype), mpi_op(c.op), env.boot.comm(), &req);
      if (rc != MPI_SUCCESS)
        throw RunError(fmt::format("{}: MPI_Iallreduce failed (code {})", env.boot.me(), rc));
      int done = 0;
      for (WaitLoop loop(env.boot.timeout()); !done;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        // A signal here, or (rank 0) another rank's failure or interrupt.
        if (!done && loop.tick() && loop.expired())
          throw TimeoutError(fmt::format("{}: MPI_Allreduce did not finish within {:g} s during {}",
                                         env.boot.me(), env.boot.timeout(), activity()));
      }
    });
  }

 private:
  UniqueBuffer work_;
};

std::string cannot_run(const CaseParams& c) {
  if (c.mem != MemKind::host && !mpi::cuda_awareness().collectives)
    return fmt::format("this MPI's collectives do not take device memory ({}), so the MPI_Allreduce "
                       "reference runs on host memory only", mpi::cuda_awareness_line());
  if (mpi_type(c.dtype) == MPI_DATATYPE_NULL)
    return fmt::format("MPI has no {} datatype", dtype_name(c.dtype));
  if (c.count > static_cast<std::size_t>(INT32_MAX)) return "count exceeds MPI's int count";
  return {};
}

GDR_REGISTER_REFERENCE(reg_mpi_ref, "mpi", "allreduce", cannot_run,
                       [] { return std::make_unique<MpiAllreduce>(); },
                       [](std::size_t max, int) { return Footprint{{max}, 0}; });

}  // namespace
}  // namespace gdr
