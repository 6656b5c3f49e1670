#include "nccl_api.h"

#include <fmt/format.h>

#include <cstring>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/core/shared_library.h"
#include "src/core/signals.h"
#include "src/core/wait_loop.h"
#include "src/memory/memory.h"
#include "test.h"

namespace gdr::nccl {
namespace {

constexpr Result kSuccess = 0;
constexpr Result kInProgress = 7;
// ncclDataType_t and ncclRedOp_t values from nccl.h.
enum Type { ncclInt32 = 2, ncclInt64 = 4, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9 };
enum RedOp { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 };

template <typename F> bool load(const SharedLibrary& lib, const char* sym, F& fn, std::string& why) {
  if (!lib.load(sym, fn) && why.empty()) why = fmt::format("libnccl.so.2 lacks {}", sym);
  return fn != nullptr;
}

}  // namespace

int type_of(DType t) {
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

int op_of(Op o) {
  switch (o) {
    case Op::sum: return ncclSum;
    case Op::prod: return ncclProd;
    case Op::min: return ncclMin;
    case Op::max: return ncclMax;
  }
  return ncclSum;
}

Api& Api::get() {
  static Api a;
  return a;
}

Api::Api() {
  SharedLibrary lib{"libnccl.so.2"};  // stays mapped for the communicators' life
  if (!lib) {
    why = fmt::format("NCCL not found: {}", lib.error());
    return;
  }
  Result (*get_version)(int*) = nullptr;
  bool ok = load(lib, "ncclGetVersion", get_version, why) &
            load(lib, "ncclGetUniqueId", get_unique_id, why) &
            load(lib, "ncclCommInitRank", comm_init_rank, why) &
            load(lib, "ncclAllReduce", all_reduce, why) & load(lib, "ncclSend", send, why) &
            load(lib, "ncclRecv", recv, why) & load(lib, "ncclGroupStart", group_start, why) &
            load(lib, "ncclGroupEnd", group_end, why) &
            load(lib, "ncclCommDestroy", comm_destroy, why) &
            load(lib, "ncclCommAbort", comm_abort, why) &
            load(lib, "ncclCommGetAsyncError", async_error, why) &
            load(lib, "ncclGetErrorString", error_string, why);
  if (ok) get_version(&version);
}

std::string Api::text(Result r) const {
  return error_string ? fmt::format("{} (code {})", error_string(r), r) : fmt::format("code {}", r);
}

Communicator::~Communicator() {
  if (comm_) Api::get().comm_destroy(comm_);
}

void Communicator::init(TestEnv& env) {
  Api& api = Api::get();
  if (!api.why.empty()) throw RunError(fmt::format("{}: {}", env.boot.me(), api.why));
  UniqueId id{};
  if (env.boot.rank() == 0) check(env, api.get_unique_id(&id), "ncclGetUniqueId");
  std::string blob = env.boot.broadcast(std::string(id.internal, sizeof id.internal));
  std::memcpy(id.internal, blob.data(), sizeof id.internal);
  check(env, api.comm_init_rank(&comm_, env.boot.size(), id, env.boot.rank()), "ncclCommInitRank");
  stream_ = static_cast<cudaStream_t>(memory_ops(MemKind::cuda)->work_stream());
}

void Communicator::check(TestEnv& env, Result r, const char* call) const {
  if (r == kSuccess || r == kInProgress) return;
  throw RunError(fmt::format("{}: {} failed: {}", env.boot.me(), call, Api::get().text(r)));
}

void Communicator::wait(TestEnv& env, const char* what) {
  for (WaitLoop loop(env.boot.timeout(), 1024);;) {
    cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady)
      throw RunError(fmt::format("{}: {}: cudaStreamQuery: {}", env.boot.me(), what,
                                 cudaGetErrorString(e)));
    if (!loop.tick()) continue;
    Result async = kSuccess;
    Api::get().async_error(comm_, &async);
    if (async != kSuccess && async != kInProgress)
      throw RunError(fmt::format("{}: {} failed: {}", env.boot.me(), what, Api::get().text(async)));
    if (loop.expired()) {
      Api::get().comm_abort(comm_);
      comm_ = nullptr;
      throw TimeoutError(fmt::format("{}: {} did not finish within {:g} s during {}", env.boot.me(),
                                     what, env.boot.timeout(), activity()));
    }
  }
}

std::string cannot_run(MemKind mem, Path path) {
  if (mem != MemKind::cuda) return "the NCCL reference runs on device memory only (-m cuda)";
  if (path != Path::direct) return "the NCCL reference is a direct-path row (NCCL moves device memory itself)";
  if (const std::string& why = Api::get().why; !why.empty()) return why;
  MemoryOps* ops = memory_ops(MemKind::cuda);
  if (std::string why = ops ? ops->unavailable_reason() : "no CUDA memory kind"; !why.empty())
    return why;
  if (ops->ranks_share_device())
    return "two ranks share one GPU here, and NCCL refuses that (one rank per GPU)";
  return {};
}

}  // namespace gdr::nccl
