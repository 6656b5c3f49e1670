// The few CUDA driver calls GPUDirect registration needs, reached through
// dlopen("libcuda.so.1") so one binary starts where there is no driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gdr::verbs {

class CudaDriver {
 public:
  // The process-wide instance; loads the driver on first use.
  static CudaDriver& get();
  // Empty when loaded, else why not ("libcuda.so.1: cannot open ...").
  const std::string& unavailable() const { return why_; }
  bool loaded() const { return why_.empty(); }

  // A dma-buf fd for [base, base+size) of device memory (page aligned).
  // Returns -1 and fills `error` (the failing call and its message) otherwise.
  int dmabuf_fd(std::uint64_t base, std::uint64_t size, std::string& error);
  // Sets CU_POINTER_ATTRIBUTE_SYNC_MEMOPS so synchronous copies on the buffer
  // are ordered with the HCA's accesses. Returns an error text, empty if ok.
  std::string set_sync_memops(std::uint64_t ptr);
  int device_count();
  // "0000:3b:00.0" of a device ordinal, empty on failure.
  std::string pci_bus_id(int ordinal);

 private:
  CudaDriver();
  std::string result_text(int result) const;

  std::string why_;
  int (*init_)(unsigned) = nullptr;
  int (*get_error_string_)(int, const char**) = nullptr;
  int (*get_handle_)(void*, unsigned long long, std::size_t, int, unsigned long long) = nullptr;
  int (*set_attribute_)(const void*, int, unsigned long long) = nullptr;
  int (*device_get_count_)(int*) = nullptr;
  int (*device_get_)(int*, int) = nullptr;
  int (*device_get_pci_bus_id_)(char*, int, int) = nullptr;
};

}  // namespace gdr::verbs
