// NCCL reached through dlopen("libnccl.so.2") so that one binary runs where
// it is missing. The few types below are NCCL's stable C ABI (nccl.h 2.x),
// declared here so that building needs no nccl.h either. Shared by the
// reference rows (ncclAllReduce, ncclSend/ncclRecv).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "src/core/datatype.h"
#include "src/memory/memory.h"
#include "transports/transport.h"

namespace gdr {

struct TestEnv;

namespace nccl {

using Comm = struct ncclComm*;
struct UniqueId {
  char internal[128];
};
using Result = int;  // 0 = ncclSuccess, 7 = ncclInProgress

int type_of(DType t);
int op_of(Op o);

// The NCCL entry points we use, loaded once per process.
struct Api {
  std::string why;  // empty when loaded
  int version = 0;
  Result (*get_unique_id)(UniqueId*) = nullptr;
  Result (*comm_init_rank)(Comm*, int, UniqueId, int) = nullptr;
  Result (*all_reduce)(const void*, void*, std::size_t, int, int, Comm, cudaStream_t) = nullptr;
  Result (*send)(const void*, std::size_t, int, int, Comm, cudaStream_t) = nullptr;
  Result (*recv)(void*, std::size_t, int, int, Comm, cudaStream_t) = nullptr;
  Result (*group_start)() = nullptr;
  Result (*group_end)() = nullptr;
  Result (*comm_destroy)(Comm) = nullptr;
  Result (*comm_abort)(Comm) = nullptr;
  Result (*async_error)(Comm, Result*) = nullptr;
  const char* (*error_string)(Result) = nullptr;

  static Api& get();
  std::string text(Result r) const;

 private:
  Api();
};

// One communicator over all ranks on this rank's compute stream. Every
// call that can wait is bounded by --timeout; a stuck communicator is
// aborted so the error reaches the user.
class Communicator {
 public:
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  // Collective over every rank (rank 0 makes the id and broadcasts it).
  void init(TestEnv& env);
  // Throws with the rank, host and `call` unless r is success/in progress.
  void check(TestEnv& env, Result r, const char* call) const;
  // Polls the stream until the work queued on it is done.
  void wait(TestEnv& env, const char* what);

  Comm comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }

 private:
  Comm comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Empty when NCCL can run a reference row for this memory kind and path,
// else why not (shown once as a note).
std::string cannot_run(MemKind mem, Path path);

}  // namespace nccl

}  // namespace gdr
