// The verbs transport's GPU-registration path as far as it goes without an
// HCA: a dma-buf fd for a cudaMalloc buffer of awkward size and offset, the
// page-aligned range it needs, and SYNC_MEMOPS. Exit 77 (skip) without a GPU.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>

#include "transports/verbs/cuda_driver.h"
#include "transports/verbs/verbs_logic.h"

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    fmt::print("SKIP: no CUDA device here\n");
    return 77;
  }
  auto& cu = gdr::verbs::CudaDriver::get();
  if (!cu.loaded()) {
    fmt::print("FAIL: CUDA driver not loadable: {}\n", cu.unavailable());
    return 1;
  }
  void* base = nullptr;
  const std::size_t alloc = (3u << 20) + 12345;  // not a multiple of any page size
  if (cudaMalloc(&base, alloc) != cudaSuccess) return 1;
  int failures = 0;
  // Buffers starting at the allocation, inside it at an odd offset, and at its tail.
  for (std::uint64_t off : {0ull, 4099ull, static_cast<unsigned long long>(alloc - 5000)}) {
    auto ptr = reinterpret_cast<std::uint64_t>(base) + off;
    std::uint64_t len = off == 0 ? alloc : 5000;
    auto range = gdr::verbs::page_aligned(ptr, len, static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    std::string err;
    int fd = cu.dmabuf_fd(range.base, range.size, err);
    std::string sync = cu.set_sync_memops(ptr);
    fmt::print("buffer at +{} ({} B): aligned range base {:#x} size {} offset {}: dma-buf fd {}{}; "
               "SYNC_MEMOPS {}\n",
               off, len, range.base, range.size, range.offset, fd, fd < 0 ? " (" + err + ")" : "",
               sync.empty() ? "set" : sync);
    failures += fd < 0 || !sync.empty();
    if (fd >= 0) close(fd);
  }
  cudaFree(base);
  fmt::print("{}\n", failures ? "FAIL" : "PASS: dma-buf export works for every buffer");
  return failures ? 1 : 0;
}
