// Memory registration for the verbs transport: small host buffers, host
// regions, and GPU regions through dma-buf or else nvidia_peermem.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "cuda_driver.h"
#include "verbs_internal.h"
#include "verbs_transport.h"

namespace gdr::verbs {

// ---- small registered buffers and regions ----

HostMr::HostMr(ibv_pd* pd, std::size_t bytes, int access, const std::string& who) {
  bytes = (bytes + 4095) & ~std::size_t(4095);
  ptr = std::aligned_alloc(4096, bytes);
  if (!ptr) throw RunError(fmt::format("{}: verbs: out of memory ({} B)", who, bytes));
  std::memset(ptr, 0, bytes);
  mr = ibv_reg_mr(pd, ptr, bytes, access);
  if (!mr) {
    int e = errno;
    std::free(ptr);
    throw RunError(fmt::format("{}: verbs: ibv_reg_mr({} B of host memory): {} (check ulimit -l)",
                               who, bytes, std::strerror(e)));
  }
}

HostMr::~HostMr() {
  if (mr) ibv_dereg_mr(mr);
  std::free(ptr);
}

VerbsRegion::VerbsRegion(const Buffer& b, std::shared_ptr<DeviceContext> dev, ibv_mr* mr,
                         int dmabuf_fd, std::uint32_t id, std::string mode)
    : MemRegion(b), dev_(std::move(dev)), mr_(mr), dmabuf_fd_(dmabuf_fd), id_(id),
      mode_(std::move(mode)) {}

VerbsRegion::~VerbsRegion() {
  if (mr_) ibv_dereg_mr(mr_);
  if (dmabuf_fd_ >= 0) ::close(dmabuf_fd_);
}

bool VerbsTransport::supports(MemKind k) const {
  if (k == MemKind::host) return true;
  auto& cu = CudaDriver::get();
  return cu.loaded() && cu.device_count() > 0;
}

// ---- memory ----

ibv_mr* VerbsTransport::register_cuda(const Buffer& b, int& fd, std::string& mode) {
  auto& cu = CudaDriver::get();
  auto ptr = reinterpret_cast<std::uint64_t>(b.ptr);
  std::string dmabuf_error, peermem_error;
  // 1. dma-buf: the kernel's own way to share device memory (no extra module).
  std::uint64_t offset = b.dmabuf_offset;
  fd = b.dmabuf_fd >= 0 ? ::dup(b.dmabuf_fd) : -1;
  if (fd < 0) {
    auto range = page_aligned(ptr, b.bytes, static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
    fd = cu.dmabuf_fd(range.base, range.size, dmabuf_error);
    offset = range.offset;
  }
  if (fd >= 0) {
    if (ibv_mr* mr = ibv_reg_dmabuf_mr(dev_->pd, offset, b.bytes, ptr, fd, kAccess)) {
      mode = "dmabuf";
      return mr;
    }
    dmabuf_error = fmt::format("ibv_reg_dmabuf_mr(fd {}, offset {}, {} B): {} (errno {})", fd,
                               offset, b.bytes, std::strerror(errno), errno);
    ::close(fd);
    fd = -1;
  }
  // 2. peer memory: ibv_reg_mr on the device pointer, through nvidia_peermem.
  if (ibv_mr* mr = ibv_reg_mr(dev_->pd, b.ptr, b.bytes, kAccess)) {
    mode = "peermem";
    return mr;
  }
  peermem_error = fmt::format("ibv_reg_mr(device pointer {}, {} B): {} (errno {})", b.ptr,
                              b.bytes, std::strerror(errno), errno);
  throw RunError(fmt::format(
      "{}: verbs: cannot register GPU memory (device {}) with {}: dma-buf: {}; peer memory: {}. "
      "Check: driver and kernel dma-buf support (CUDA 11.7+ open kernel modules, Linux 5.12+), "
      "`lsmod | grep nvidia_peermem`, and `gdrbench doctor`",
      boot_.me(), b.device, port_.device, dmabuf_error, peermem_error));
}

std::unique_ptr<MemRegion> VerbsTransport::register_memory(const Buffer& b) {
  std::uint32_t id = next_region_++;
  ibv_mr* mr = nullptr;
  int fd = -1;
  std::string mode = "host", error;
  try {
    if (b.kind == MemKind::cuda) {
      mr = register_cuda(b, fd, mode);
      if (auto e = CudaDriver::get().set_sync_memops(reinterpret_cast<std::uint64_t>(b.ptr));
          !e.empty())
        throw RunError(fmt::format("{}: verbs: {}", boot_.me(), e));
    } else if (!(mr = ibv_reg_mr(dev_->pd, b.ptr, b.bytes, kAccess))) {
      throw RunError(fmt::format("{}: verbs: ibv_reg_mr({} B of host memory) on {}: {} (check "
                                 "ulimit -l)",
                                 boot_.me(), b.bytes, port_.device, std::strerror(errno)));
    }
  } catch (const RunError& e) {
    error = e.what();
  }
  auto region = mr ? std::make_unique<VerbsRegion>(b, dev_, mr, fd, id, mode) : nullptr;

  // Collective: every rank learns every region's address and key, and
  // whether anyone failed (so nobody waits for a rank that gave up).
  WireRegion w{reinterpret_cast<std::uint64_t>(b.ptr), b.bytes, mr ? mr->rkey : 0, mr ? 1u : 0u};
  auto all = boot_.allgather(std::as_bytes(std::span(&w, 1)));
  if (!error.empty()) throw RunError(error);
  for (int r = 0; r < boot_.size(); ++r) {
    WireRegion theirs;
    std::memcpy(&theirs, all.at(r).data(), sizeof theirs);
    if (!theirs.ok)
      throw RunError(fmt::format("{}: verbs: {} could not register its buffer {}", boot_.me(),
                                 boot_.who(r), id));
    remote_[r][id] = {theirs.addr, theirs.bytes, theirs.rkey};
  }
  if (b.kind == MemKind::cuda) registration_ = mode;
  return region;
}

}  // namespace gdr::verbs
