// Where does a GPU round trip's time go on this machine? Times, in
// microseconds, the smallest operations the benchmark's device paths are
// made of: an empty kernel + synchronize, an 8-byte copy to pinned host
// memory, back-to-back launches, and a kernel that signals the host through
// mapped pinned memory (submission and completion seen without the driver's
// completion path). Optional argument: spin | yield | block (the context's
// scheduling flag); a second argument "hold" keeps the process (with its
// context) alive for N seconds, to see what a second idle context costs.
//
// build: nvcc -O2 -arch=sm_90 -o latency_probe latency_probe.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK(x)                                                                    \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

using Clock = std::chrono::steady_clock;
static double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

__global__ void empty() {}
__global__ void signal(volatile int* flag, int v) { *flag = v; }

template <typename F> void report(const char* what, int n, F&& once) {
  std::vector<double> t;
  for (int i = 0; i < n + 3; ++i) {
    auto t0 = Clock::now();
    once();
    if (i >= 3) t.push_back(us_since(t0));
  }
  std::sort(t.begin(), t.end());
  double sum = 0;
  for (double x : t) sum += x;
  std::printf("%-48s median %9.2f  min %9.2f  mean %9.2f us\n", what, t[t.size() / 2], t[0], sum / t.size());
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "auto";
  unsigned flags = cudaDeviceScheduleAuto;
  if (!std::strcmp(mode, "spin")) flags = cudaDeviceScheduleSpin;
  if (!std::strcmp(mode, "yield")) flags = cudaDeviceScheduleYield;
  if (!std::strcmp(mode, "block")) flags = cudaDeviceScheduleBlockingSync;
  CK(cudaSetDeviceFlags(flags | cudaDeviceMapHost));
  CK(cudaFree(nullptr));
  if (argc > 2) {  // an idle second context
    std::this_thread::sleep_for(std::chrono::seconds(std::atoi(argv[2])));
    return 0;
  }
  std::printf("-- scheduling %s\n", mode);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  void *d, *h;
  CK(cudaMalloc(&d, 1 << 20));
  CK(cudaHostAlloc(&h, 1 << 20, cudaHostAllocMapped));
  int* flag;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&flag), 64, cudaHostAllocMapped));
  int* dflag;
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), flag, 0));

  report("cudaStreamSynchronize, idle stream", 200, [&] { CK(cudaStreamSynchronize(s)); });
  report("empty kernel + cudaStreamSynchronize", 200, [&] {
    empty<<<1, 1, 0, s>>>();
    CK(cudaStreamSynchronize(s));
  });
  report("empty kernel + event record + query loop", 200, [&] {
    empty<<<1, 1, 0, s>>>();
    CK(cudaEventRecord(ev, s));
    while (cudaEventQuery(ev) == cudaErrorNotReady) {}
  });
  report("8 B cudaMemcpyAsync D2H pinned + sync", 200, [&] {
    CK(cudaMemcpyAsync(h, d, 8, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
  });
  report("8 B cudaMemcpyAsync H2D pinned + sync", 200, [&] {
    CK(cudaMemcpyAsync(d, h, 8, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));
  });
  report("1 MiB cudaMemcpyAsync D2D + sync", 100, [&] {
    CK(cudaMemcpyAsync(static_cast<char*>(d) + (1 << 19), d, 1 << 19, cudaMemcpyDeviceToDevice, s));
    CK(cudaStreamSynchronize(s));
  });
  report("100 empty kernels back to back + sync (total)", 20, [&] {
    for (int i = 0; i < 100; ++i) empty<<<1, 1, 0, s>>>();
    CK(cudaStreamSynchronize(s));
  });
  report("kernel launch -> host sees flag (mapped memory)", 200, [&] {
    static int v = 0;
    ++v;
    signal<<<1, 1, 0, s>>>(dflag, v);
    while (*reinterpret_cast<volatile int*>(flag) != v) {}
  });
  report("  ... then cudaStreamSynchronize after flag", 200, [&] {
    static int v = 1 << 20;
    ++v;
    signal<<<1, 1, 0, s>>>(dflag, v);
    while (*reinterpret_cast<volatile int*>(flag) != v) {}
    CK(cudaStreamSynchronize(s));
  });
  report("cudaLaunchKernel call alone (no wait)", 200, [&] { empty<<<1, 1, 0, s>>>(); });
  CK(cudaStreamSynchronize(s));
  return 0;
}
