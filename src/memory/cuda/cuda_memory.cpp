// The CUDA memory kind: cudaMalloc'd buffers on this rank's GPU, kernels
// (cuda_kernels.cu) on one stream for reduce/fill/check, and background
// copies to and from pinned host memory for the staged path, one stream per
// direction so a chunk going down overlaps one coming up.
//
// Only the runtime (libcudart) is linked: it loads the driver itself, so a
// machine without one starts the binary and reports why -m cuda cannot run.
#include "cuda_memory.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "cuda_kernels.h"
#include "core/errors.h"
#include "memory/exact_inputs.h"
#include "memory/host_reduce.h"
#include "memory/memory.h"
#include "core/signals.h"
#include "core/wait_loop.h"
#include "core/sizes.h"
#include "core/launcher.h"

namespace gdr::cuda {
namespace {

PatternSeeds seeds_of(std::span<const std::uint64_t> seeds) {
  if (seeds.size() > PatternSeeds::kMost)
    throw RunError(fmt::format("pattern kernels take at most {} slots, not {}", PatternSeeds::kMost, seeds.size()));
  PatternSeeds p;
  p.n = static_cast<int>(seeds.size());
  std::copy(seeds.begin(), seeds.end(), p.s);
  return p;
}

struct Choice {
  int device = -1;
  int local_rank = -1;  // -1: not told; read the launcher's variable
  int max_local_ranks = 0;
  std::string who;
};
Choice& choice() {
  static Choice c;
  return c;
}

std::string default_who() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return fmt::format("rank {} ({})",
                     launcher::rank(),
                     host);
}

std::string cuda_text(cudaError_t e) {
  return fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
}

class CudaMemory final : public MemoryOps {
 public:
  MemKind kind() const override { return MemKind::cuda; }

  std::string unavailable_reason() const override {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return fmt::format("no CUDA device: {}", cudaGetErrorString(e));
    if (n == 0) return "no CUDA device: cudaGetDeviceCount found none";
    if (choice().device >= n)
      return fmt::format("--device {} but this node has {} CUDA device{}", choice().device, n,
                         n == 1 ? "" : "s");
    return {};
  }

  int device_count() const {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }

  // Picks and opens the device on first use; every entry point calls it.
  void ensure() {
    if (ready_) return;  // one thread drives the GPU: the device stays current
    if (std::string why = unavailable_reason(); !why.empty())
      throw UsageError(fmt::format("-m cuda: {}: {}", who(), why));
    const Choice& c = choice();
    int local = c.local_rank >= 0 ? c.local_rank : launcher::local_rank();
    dev_ = c.device >= 0 ? c.device : local % device_count();
    check(cudaSetDevice(dev_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&d2h_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&h2d_, cudaStreamNonBlocking), "cudaStreamCreate");
    int sms = 0, threads = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev_), "cudaDeviceGetAttribute");
    check(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, dev_),
          "cudaDeviceGetAttribute");
    max_blocks_ = std::max(1, sms * std::max(1, threads / kThreads));
    check(cudaMalloc(reinterpret_cast<void**>(&d_counter_), sizeof(unsigned long long)), "cudaMalloc (check counter)");
    check(cudaHostAlloc(reinterpret_cast<void**>(&h_counter_), sizeof(unsigned long long), cudaHostAllocDefault),
          "cudaHostAlloc (check counter)");
    ready_ = true;
  }

  int device() { ensure(); return dev_; }
  cudaStream_t stream() { ensure(); return stream_; }

  Buffer alloc(std::size_t bytes) override {
    ensure();
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, std::max<std::size_t>(bytes, 1)); e != cudaSuccess) {
      cudaGetLastError();  // clear it so later calls do not report it again
      std::string m = fmt::format("{}: cannot allocate {} B ({}) of cuda memory on device {}: cudaMalloc: {}",
                                  who(), bytes, approx_bytes(bytes), dev_, cuda_text(e));
      if (e == cudaErrorMemoryAllocation) throw OutOfMemoryError(m);
      throw RunError(m);
    }
    // Defined contents from the start, outside any timed region.
    check(cudaMemset(p, 0, std::max<std::size_t>(bytes, 1)), "cudaMemset");
    return Buffer{p, bytes, MemKind::cuda, dev_, -1, 0};
  }

  void free(Buffer& b) override {
    if (b.ptr) cudaFree(b.ptr);  // never throws: called from destructors
    b.ptr = nullptr;
  }

  void copy(void* dst, const void* src, std::size_t n) override {
    ensure();
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
  }
  // Synchronous: the host side may be pageable and is read right after.
  void to_host(void* dst, const void* src, std::size_t n) override {
    copy(dst, src, n);
    sync();
  }
  void from_host(void* dst, const void* src, std::size_t n) override {
    copy(dst, src, n);
    sync();
  }

  void reduce(void* dst, const void* src, std::size_t count, DType t, Op op) override {
    ensure();
    check(launch_reduce(dst, src, count, t, op, {stream_, max_blocks_}), "reduce kernel launch");
  }

  std::uint64_t reduce_async(void* dst, const void* src, std::size_t count, DType t,
                             Op op) override {
    reduce(dst, src, count, t, op);
    std::uint64_t ticket = take_event();
    check(cudaEventRecord(events_[ticket], stream_), "cudaEventRecord (reduce)");
    return ticket;
  }
  bool reduce_done(std::uint64_t ticket) override { return copy_done(ticket); }

  void fill_input(void* dst, std::size_t count, DType t, Op op, int rank, int it) override {
    ensure();
    InputTable tab{};
    // The host's own conversions (host_reduce.h), so inputs match bit for bit.
    host::dispatch(t, [&]<DType T>() {
      using V = typename host::Elem<T>::type;
      for (int p = 0; p < exact::kPeriod; ++p) {
        V v = host::from_double<V>(exact::input_at_phase(static_cast<int>(op), p, rank));
        std::memcpy(tab.bytes + p * sizeof(V), &v, sizeof(V));
      }
    });
    check(launch_fill(dst, count, dtype_size(t), tab, it, {stream_, max_blocks_}), "fill kernel launch");
  }

  std::uint64_t count_wrong(const void* buf, std::size_t count, DType t, Op op, int nranks,
                            int it) override {
    ensure();
    ExpectedTable tab{};
    for (int p = 0; p < exact::kPeriod; ++p)
      tab.v[p] = exact::expected_at_phase(static_cast<int>(op), p, nranks);
    check(cudaMemsetAsync(d_counter_, 0, sizeof *d_counter_, stream_), "cudaMemsetAsync");
    check(launch_count_wrong(buf, count, t, tab, it, d_counter_, {stream_, max_blocks_}),
          "check kernel launch");
    check(cudaMemcpyAsync(h_counter_, d_counter_, sizeof *d_counter_, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
    sync();
    return *h_counter_;
  }

  void fill_patterns(void* dst, std::size_t bytes, std::span<const std::uint64_t> seeds) override {
    ensure();
    check(launch_fill_pattern(dst, bytes, seeds_of(seeds), {stream_, max_blocks_}), "pattern fill kernel launch");
  }

  std::uint64_t count_wrong_patterns(const void* buf, std::size_t bytes,
                                     std::span<const std::uint64_t> seeds) override {
    ensure();
    check(cudaMemsetAsync(d_counter_, 0, sizeof *d_counter_, stream_), "cudaMemsetAsync");
    check(launch_count_wrong_pattern(buf, bytes, seeds_of(seeds), d_counter_, {stream_, max_blocks_}),
          "pattern check kernel launch");
    check(cudaMemcpyAsync(h_counter_, d_counter_, sizeof *d_counter_, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
    sync();
    return *h_counter_;
  }

  // All n copies go out at once on the compute stream between two timing
  // events; the host only polls the last event (with the deadline).
  double time_copies(void* dst, const void* src, std::size_t bytes, int n, CopyKind k,
                     double timeout_s) override {
    ensure();
    if (!timing_[0]) {
      check(cudaEventCreate(&timing_[0]), "cudaEventCreate (timing)");
      check(cudaEventCreate(&timing_[1]), "cudaEventCreate (timing)");
    }
    const cudaMemcpyKind kind = k == CopyKind::within    ? cudaMemcpyDeviceToDevice
                                : k == CopyKind::to_host ? cudaMemcpyDeviceToHost
                                                         : cudaMemcpyHostToDevice;
    check(cudaEventRecord(timing_[0], stream_), "cudaEventRecord (copy window start)");
    for (int i = 0; i < n; ++i) check(cudaMemcpyAsync(dst, src, bytes, kind, stream_), "cudaMemcpyAsync (copy window)");
    check(cudaEventRecord(timing_[1], stream_), "cudaEventRecord (copy window end)");
    for (WaitLoop loop(timeout_s, 1024);;) {
      cudaError_t e = cudaEventQuery(timing_[1]);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) check(e, "cudaEventQuery (copy window)");
      if (loop.tick() && loop.expired())
        throw TimeoutError(fmt::format("{}: {} copies of {} B on CUDA device {} did not finish within {:g} s",
                                       who(), n, bytes, dev_, timeout_s));
    }
    float ms = 0;
    check(cudaEventElapsedTime(&ms, timing_[0], timing_[1]), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  void sync() override {
    if (ready_) check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void* alloc_pinned(std::size_t bytes) override {
    ensure();
    void* p = nullptr;
    if (cudaError_t e = cudaHostAlloc(&p, std::max<std::size_t>(bytes, 1), cudaHostAllocPortable);
        e != cudaSuccess) {
      cudaGetLastError();
      std::string m = fmt::format("{}: cannot allocate {} B ({}) of pinned host memory: cudaHostAlloc: {}",
                                  who(), bytes, approx_bytes(bytes), cuda_text(e));
      if (e == cudaErrorMemoryAllocation) throw OutOfMemoryError(m);
      throw RunError(m);
    }
    std::memset(p, 0, bytes);
    return p;
  }
  void free_pinned(void* p) override {
    if (p) cudaFreeHost(p);
  }

  std::string device_label() override { return gpu_label(); }
  std::string device_bus_id() override { return pci_bus_id(); }
  bool ranks_share_device() override { return ranks_share_gpu(); }
  void* work_stream() override { return stream(); }

  // Free device memory (cudaMemGetInfo), shared by the ranks of this node
  // that use the same device.
  Capacity capacity(int local_ranks) override {
    ensure();
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    int n = std::max(local_ranks, 1), devices = std::max(device_count(), 1);
    int sharing = choice().device >= 0 ? n : (n + devices - 1) / devices;
    Capacity c;
    c.bytes = free / sharing;
    c.source = fmt::format("{} of {} free on device {} (cudaMemGetInfo){}", approx_bytes(free),
                           approx_bytes(total), dev_,
                           sharing > 1 ? fmt::format(", shared by {} ranks", sharing) : "");
    return c;
  }

  std::uint64_t copy_async(void* dst, const void* src, std::size_t n, CopyDir dir) override {
    ensure();
    cudaStream_t s = dir == CopyDir::to_host ? d2h_ : h2d_;
    check(cudaMemcpyAsync(dst, src, n, dir == CopyDir::to_host ? cudaMemcpyDeviceToHost
                                                                 : cudaMemcpyHostToDevice, s),
          dir == CopyDir::to_host ? "cudaMemcpyAsync device->pinned host"
                                  : "cudaMemcpyAsync pinned host->device");
    std::uint64_t ticket = take_event();
    check(cudaEventRecord(events_[ticket], s), "cudaEventRecord");
    return ticket;
  }

  bool copy_done(std::uint64_t ticket) override {
    cudaError_t e = cudaEventQuery(events_.at(ticket));
    if (e == cudaErrorNotReady) return false;
    check(e, "cudaEventQuery (staging copy)");
    free_events_.push_back(ticket);
    return true;
  }

  const std::string& who_text() {
    if (choice().who.empty()) choice().who = default_who();
    return choice().who;
  }

 private:
  const std::string& who() { return who_text(); }

  void check(cudaError_t e, const char* call) {
    if (e == cudaSuccess) return;
    cudaGetLastError();
    throw RunError(fmt::format("{}: {} on CUDA device {} failed: {}", who(), call, dev_, cuda_text(e)));
  }

  // Events are pooled: creating one per chunk would cost more than the query.
  std::uint64_t take_event() {
    if (free_events_.empty()) {
      cudaEvent_t ev;
      check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
      events_.push_back(ev);
      return events_.size() - 1;
    }
    std::uint64_t t = free_events_.back();
    free_events_.pop_back();
    return t;
  }

  bool ready_ = false;
  int dev_ = -1;
  int max_blocks_ = 1;
  cudaStream_t stream_ = nullptr, d2h_ = nullptr, h2d_ = nullptr;
  unsigned long long* d_counter_ = nullptr;
  unsigned long long* h_counter_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::vector<std::uint64_t> free_events_;
  cudaEvent_t timing_[2] = {nullptr, nullptr};
};

// Never destroyed: at exit the CUDA runtime may already be gone.
CudaMemory& g_cuda = *new CudaMemory;
[[maybe_unused]] const bool g_registered = (register_memory_ops(MemKind::cuda, &g_cuda), true);

}  // namespace

void set_cuda_device_choice(int device, int local_rank, int max_local_ranks, const std::string& who) {
  choice() = Choice{device, local_rank, max_local_ranks, who};
}

int current_device() { return g_cuda.device(); }

bool ranks_share_gpu() {
  const Choice& c = choice();
  int per_node = c.max_local_ranks > 0
                     ? c.max_local_ranks
                     : launcher::local_size();
  if (per_node <= 1) return false;
  return c.device >= 0 || per_node > g_cuda.device_count();
}

const std::string& who() { return g_cuda.who_text(); }

std::string pci_bus_id() {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, current_device()) != cudaSuccess) return {};
  return id;
}

std::string gpu_label() {
  std::string id = pci_bus_id();
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, current_device()) != cudaSuccess) return id;
  return id.empty() ? std::string(p.name) : id + " " + p.name;
}

}  // namespace gdr::cuda
