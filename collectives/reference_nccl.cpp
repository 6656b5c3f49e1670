// Reference row: NCCL's own ncclAllReduce on the same device buffers,
// inputs and checks as our ring (timed_allreduce_loop), so the two rows
// compare like for like.
//
// NCCL is reached through dlopen("libnccl.so.2") so that one binary runs
// where it is missing; the few types below are NCCL's stable C ABI (nccl.h
// 2.x), declared here so that building needs no nccl.h either.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>

#include "src/bootstrap.h"
#include "src/cuda/cuda_memory.h"
#include "src/errors.h"
#include "src/signals.h"
#include "test.h"
#include "timed_loop.h"

namespace gdr {
namespace {

using ncclComm_t = struct ncclComm*;
struct ncclUniqueId {
  char internal[128];
};
using ncclResult_t = int;  // 0 = ncclSuccess, 7 = ncclInProgress
constexpr ncclResult_t kNcclSuccess = 0;
constexpr ncclResult_t kNcclInProgress = 7;
// ncclDataType_t and ncclRedOp_t values from nccl.h.
enum NcclType { ncclInt32 = 2, ncclInt64 = 4, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9 };
enum NcclOp { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 };

int nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
  }
  return ncclFloat32;
}

int nccl_op(Op o) {
  switch (o) {
    case Op::sum: return ncclSum;
    case Op::prod: return ncclProd;
    case Op::min: return ncclMin;
    case Op::max: return ncclMax;
  }
  return ncclSum;
}

// The NCCL entry points we use, loaded once per process.
struct Nccl {
  std::string why;  // empty when loaded
  int version = 0;
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, std::size_t, int, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  ncclResult_t (*async_error)(ncclComm_t, ncclResult_t*) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;

  static Nccl& get() {
    static Nccl n;
    return n;
  }

  std::string text(ncclResult_t r) const {
    return error_string ? fmt::format("{} (code {})", error_string(r), r) : fmt::format("code {}", r);
  }

 private:
  Nccl() {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      why = fmt::format("NCCL not found: {}", e ? e : "dlopen(libnccl.so.2) failed");
      return;
    }
    bool ok = load(lib, "ncclGetVersion", get_version) && load(lib, "ncclGetUniqueId", get_unique_id) &&
              load(lib, "ncclCommInitRank", comm_init_rank) && load(lib, "ncclAllReduce", all_reduce) &&
              load(lib, "ncclCommDestroy", comm_destroy) && load(lib, "ncclCommAbort", comm_abort) &&
              load(lib, "ncclCommGetAsyncError", async_error) &&
              load(lib, "ncclGetErrorString", error_string);
    if (ok) get_version(&version);
  }
  template <typename F> bool load(void* lib, const char* sym, F& fn) {
    fn = reinterpret_cast<F>(dlsym(lib, sym));
    if (!fn) why = fmt::format("libnccl.so.2 lacks {}", sym);
    return fn != nullptr;
  }
};

class NcclAllreduce final : public Test {
 public:
  ~NcclAllreduce() override {
    if (comm_) Nccl::get().comm_destroy(comm_);
  }

  // Collective: every rank builds the communicator with the id rank 0 made.
  void prepare(TestEnv& env, std::size_t max_bytes) override {
    Nccl& nccl = Nccl::get();
    if (!nccl.why.empty()) throw RunError(fmt::format("{}: {}", env.boot.me(), nccl.why));
    work_ = UniqueBuffer(&env.mem, max_bytes);  // also makes this rank's GPU current
    ncclUniqueId id{};
    if (env.boot.rank() == 0) check(env, nccl.get_unique_id(&id), "ncclGetUniqueId");
    std::string blob = env.boot.broadcast(std::string(id.internal, sizeof id.internal));
    std::memcpy(id.internal, blob.data(), sizeof id.internal);
    check(env, nccl.comm_init_rank(&comm_, env.boot.size(), id, env.boot.rank()), "ncclCommInitRank");
    stream_ = static_cast<cudaStream_t>(cuda::compute_stream());
  }

  CaseOutcome run(TestEnv& env, const CaseParams& c) override {
    return timed_allreduce_loop(env, c, work_.data(), [&] {
      check(env, Nccl::get().all_reduce(work_.data(), work_.data(), c.count, nccl_type(c.dtype),
                                        nccl_op(c.op), comm_, stream_),
            "ncclAllReduce");
      wait(env);
    });
  }

 private:
  void check(TestEnv& env, ncclResult_t r, const char* call) {
    if (r == kNcclSuccess || r == kNcclInProgress) return;
    throw RunError(fmt::format("{}: {} failed: {}", env.boot.me(), call, Nccl::get().text(r)));
  }

  // Polls the stream so that --timeout holds even if a peer never joins;
  // a stuck communicator is aborted so the error can reach the user.
  void wait(TestEnv& env) {
    Deadline deadline(env.boot.timeout());
    for (unsigned spins = 0;; ++spins) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady)
        throw RunError(fmt::format("{}: ncclAllReduce: cudaStreamQuery: {}", env.boot.me(),
                                   cudaGetErrorString(e)));
      if ((spins & 1023u) != 1023u) continue;
      ncclResult_t async = kNcclSuccess;
      Nccl::get().async_error(comm_, &async);
      if (async != kNcclSuccess && async != kNcclInProgress)
        throw RunError(fmt::format("{}: ncclAllReduce failed: {}", env.boot.me(), Nccl::get().text(async)));
      throw_if_interrupted();
      if (deadline.expired()) {
        Nccl::get().comm_abort(comm_);
        comm_ = nullptr;
        throw TimeoutError(fmt::format("{}: ncclAllReduce did not finish within {:g} s during {}",
                                       env.boot.me(), env.boot.timeout(), activity()));
      }
    }
  }

  UniqueBuffer work_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

std::string cannot_run(const CaseParams& c) {
  if (c.mem != MemKind::cuda) return "the NCCL reference runs on device memory only (-m cuda)";
  if (c.path != Path::direct) return "the NCCL reference is a direct-path row (NCCL moves device memory itself)";
  if (const std::string& why = Nccl::get().why; !why.empty()) return why;
  MemoryOps* ops = memory_ops(MemKind::cuda);
  if (std::string why = ops ? ops->unavailable_reason() : "no CUDA memory kind"; !why.empty())
    return why;
  if (cuda::ranks_share_gpu())
    return "two ranks share one GPU here, and NCCL refuses that (one rank per GPU)";
  return {};
}

GDR_REGISTER_REFERENCE(reg_nccl_ref, "nccl", "allreduce", cannot_run,
                       [] { return std::make_unique<NcclAllreduce>(); },
                       [](std::size_t max, int) { return Footprint{max, 0}; });

}  // namespace
}  // namespace gdr
