#include "cuda_driver.h"

#include <fmt/format.h>

#include "src/core/shared_library.h"

namespace gdr::verbs {
namespace {
// Values from the driver API (cuda.h); stable parts of its ABI. They are
// spelled here so this file builds without the CUDA toolkit.
constexpr int kCudaSuccess = 0;
constexpr int kRangeHandleDmabufFd = 0x1;  // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
constexpr int kAttrSyncMemops = 6;         // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
}  // namespace

CudaDriver& CudaDriver::get() {
  static CudaDriver d;
  return d;
}

CudaDriver::CudaDriver() {
  SharedLibrary lib{"libcuda.so.1"};  // stays mapped: drivers are never unloaded
  if (!lib) {
    why_ = fmt::format("no CUDA driver ({})", lib.error());
    return;
  }
  // cuMemGetHandleForAddressRange appeared in CUDA 11.7; older drivers only
  // lose the dma-buf path.
  lib.load("cuMemGetHandleForAddressRange", get_handle_);
  if (!lib.load("cuInit", init_) || !lib.load("cuGetErrorString", get_error_string_) ||
      !lib.load("cuPointerSetAttribute", set_attribute_) ||
      !lib.load("cuDeviceGetCount", device_get_count_) || !lib.load("cuDeviceGet", device_get_) ||
      !lib.load("cuDeviceGetPCIBusId", device_get_pci_bus_id_)) {
    why_ = "libcuda.so.1 lacks a driver entry point gdrbench needs";
    return;
  }
  if (int r = init_(0); r != kCudaSuccess) why_ = fmt::format("cuInit: {}", result_text(r));
}

std::string CudaDriver::result_text(int result) const {
  const char* s = nullptr;
  if (get_error_string_ && get_error_string_(result, &s) == kCudaSuccess && s)
    return fmt::format("{} (CUresult {})", s, result);
  return fmt::format("CUresult {}", result);
}

int CudaDriver::dmabuf_fd(std::uint64_t base, std::uint64_t size, std::string& error) {
  if (!loaded()) { error = why_; return -1; }
  if (!get_handle_) {
    error = "cuMemGetHandleForAddressRange: not in this driver (needs CUDA 11.7+ driver)";
    return -1;
  }
  int fd = -1;
  int r = get_handle_(&fd, base, size, kRangeHandleDmabufFd, 0);
  if (r != kCudaSuccess) {
    error = fmt::format("cuMemGetHandleForAddressRange(0x{:x}, {} B, DMA_BUF_FD): {}", base, size,
                        result_text(r));
    return -1;
  }
  return fd;
}

std::string CudaDriver::set_sync_memops(std::uint64_t ptr) {
  if (!loaded()) return why_;
  unsigned int one = 1;
  int r = set_attribute_(&one, kAttrSyncMemops, ptr);
  if (r == kCudaSuccess) return {};
  return fmt::format("cuPointerSetAttribute(SYNC_MEMOPS, 0x{:x}): {}", ptr, result_text(r));
}

int CudaDriver::device_count() {
  int n = 0;
  if (!loaded() || device_get_count_(&n) != kCudaSuccess) return 0;
  return n;
}

std::string CudaDriver::pci_bus_id(int ordinal) {
  int dev = 0;
  char id[32] = {};
  if (!loaded() || device_get_(&dev, ordinal) != kCudaSuccess ||
      device_get_pci_bus_id_(id, sizeof id, dev) != kCudaSuccess)
    return {};
  return id;
}

}  // namespace gdr::verbs
