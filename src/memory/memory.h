// Memory kinds: where a benchmark's buffers live and how to work on them.
//
// One table of operations per kind (as UCC's memory components do): the
// collectives allocate, fill, reduce and check through it and never ask
// which kind they hold. The host kind lives in memory_host.cpp; the CUDA
// kind registers itself from src/memory/cuda/ when it is built.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/datatype.h"
#include "core/errors.h"

namespace gdr {

// The memory kinds, as -m names them. host and cuda have names here because
// transports tell them apart (a transport's folder decides which kinds it
// moves directly); both are listed whether built into this binary or not.
// Any other kind is its folder alone: it registers its table under its name
// (register_memory_kind) and gets the next number, so MemKind holds more
// values than the two named.
enum class MemKind : int { host, cuda };
std::string_view mem_name(MemKind k);
MemKind parse_mem(std::string_view s);  // throws UsageError
// host, cuda, then the other registered kinds by name.
const std::vector<MemKind>& mem_kinds();

// An allocation. A transport decides how to register it: dma-buf when
// `dmabuf_fd` >= 0 (perftest's lesson), else the plain pointer.
struct Buffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  MemKind kind = MemKind::host;
  int device = -1;            // CUDA device ordinal, -1 for host
  int dmabuf_fd = -1;         // filled on demand by transports that want it
  std::uint64_t dmabuf_offset = 0;
};

class MemoryOps {
 public:
  virtual ~MemoryOps() = default;
  virtual MemKind kind() const = 0;
  // Empty when usable; otherwise why not ("no CUDA device: ...").
  virtual std::string unavailable_reason() const = 0;
  // Throws RunError naming the size and the kind when allocation fails.
  virtual Buffer alloc(std::size_t bytes) = 0;
  virtual void free(Buffer& b) = 0;
  // Copies within this kind. Asynchronous where the kind allows; sync() orders it.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Copies between this kind and plain host memory (for staging, checks).
  virtual void to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void from_host(void* dst, const void* host_src, std::size_t bytes) = 0;
  // dst[i] = dst[i] (op) src[i], count elements.
  virtual void reduce(void* dst, const void* src, std::size_t count, DType t, Op op) = 0;
  // Writes rank r's exact input for iteration `it` (see exact_inputs.h).
  virtual void fill_input(void* dst, std::size_t count, DType t, Op op, int rank, int it) = 0;
  // Number of elements differing from the exact expected result.
  virtual std::uint64_t count_wrong(const void* buf, std::size_t count, DType t, Op op,
                                    int nranks, int it) = 0;
  // Waits for everything issued on this kind so far (not the *_async copies below).
  virtual void sync() = 0;

  // Point-to-point payloads (pattern.h) in seeds.size() consecutive slots
  // of `bytes` each, slot k with seeds[k] (at most 64): writes the patterns,
  // and counts the bytes that differ from them. On the device for device
  // memory, one kernel for all slots (two processes time-slicing one GPU
  // pay per launch); count_wrong_patterns waits for its answer.
  virtual void fill_patterns(void* dst, std::size_t bytes, std::span<const std::uint64_t> seeds) = 0;
  virtual std::uint64_t count_wrong_patterns(const void* buf, std::size_t bytes,
                                             std::span<const std::uint64_t> seeds) = 0;
  void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed) { fill_patterns(dst, bytes, {&seed, 1}); }
  std::uint64_t count_wrong_pattern(const void* buf, std::size_t bytes, std::uint64_t seed) {
    return count_wrong_patterns(buf, bytes, {&seed, 1});
  }

  // The copy reference rows: seconds that `n` back-to-back copies of `bytes`
  // take when issued at once on one stream, timed by the kind's own clock
  // (CUDA events), so the number is the copy engine's and not the host's.
  // `within` copies inside this kind; the others between this kind and
  // alloc_pinned memory. Gives up after `timeout_s` (TimeoutError).
  enum class CopyKind { within, to_host, from_host };
  virtual double time_copies(void* dst, const void* src, std::size_t bytes, int n, CopyKind k,
                             double timeout_s);

  // For the staged path (transports/staged): page-locked host memory that
  // this kind's copy engines reach at full speed, and copies between it and
  // this kind that run in the background while the wire moves other chunks.
  // copy_async's source must be final when it is called. Its ticket is
  // polled with copy_done(), which returns true once, then forgets it.
  // Host defaults: plain memory, and the copy happens at once.
  enum class CopyDir { to_host, from_host };
  virtual void* alloc_pinned(std::size_t bytes) {
    std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, rounded);
    if (!p)
      throw OutOfMemoryError("cannot allocate " + std::to_string(bytes) + " B of staging host memory");
    std::memset(p, 0, rounded);
    return p;
  }
  virtual void free_pinned(void* p) { std::free(p); }
  virtual std::uint64_t copy_async(void* dst, const void* src, std::size_t bytes, CopyDir) {
    std::memcpy(dst, src, bytes);
    return 0;
  }
  virtual bool copy_done(std::uint64_t /*ticket*/) { return true; }
  // dst = dst (op) src in the background, so a pipelined collective can keep
  // the wire busy meanwhile; poll its ticket with reduce_done().
  // Default: reduce at once.
  virtual std::uint64_t reduce_async(void* dst, const void* src, std::size_t count, DType t, Op op) {
    reduce(dst, src, count, t, op);
    sync();
    return 0;
  }
  virtual bool reduce_done(std::uint64_t /*ticket*/) { return true; }

  // How much of this kind one rank may still allocate, for the check before
  // a sweep; `local_ranks` ranks of this node share it. bytes = SIZE_MAX when
  // unknown; `source` says where the figure comes from, for the message.
  struct Capacity {
    std::size_t bytes = SIZE_MAX;
    std::string source;
  };
  virtual Capacity capacity(int /*local_ranks*/) { return {}; }
  // The device of this kind this rank uses, for the results: its label
  // ("0000:3B:00.0 NVIDIA H200", /ranks/gpu) and PCI bus id as the kind's
  // library writes it; "" for none (host) or when it cannot say.
  virtual std::string device_label() { return {}; }
  virtual std::string device_bus_id() { return {}; }
  // Whether two ranks of one node land on one device of this kind.
  virtual bool ranks_share_device() { return false; }
  // The stream this kind's copies and kernels run on (a cudaStream_t for
  // cuda), for a library that works on the kind's memory itself (NCCL) and
  // must be ordered with them; nullptr for a kind without one (host).
  virtual void* work_stream() { return nullptr; }
};

// Forwards every operation to another table; a subclass changes a few
// (the sweep's buffer cache, a test's lagging copies).
class ForwardingMemory : public MemoryOps {
 public:
  explicit ForwardingMemory(MemoryOps& inner) : inner_(inner) {}
  MemKind kind() const override { return inner_.kind(); }
  std::string unavailable_reason() const override { return inner_.unavailable_reason(); }
  Buffer alloc(std::size_t n) override { return inner_.alloc(n); }
  void free(Buffer& b) override { inner_.free(b); }
  void copy(void* d, const void* s, std::size_t n) override { inner_.copy(d, s, n); }
  void to_host(void* d, const void* s, std::size_t n) override { inner_.to_host(d, s, n); }
  void from_host(void* d, const void* s, std::size_t n) override { inner_.from_host(d, s, n); }
  void reduce(void* d, const void* s, std::size_t n, DType t, Op op) override { inner_.reduce(d, s, n, t, op); }
  void fill_input(void* d, std::size_t n, DType t, Op op, int rank, int it) override {
    inner_.fill_input(d, n, t, op, rank, it);
  }
  std::uint64_t count_wrong(const void* b, std::size_t n, DType t, Op op, int nranks, int it) override {
    return inner_.count_wrong(b, n, t, op, nranks, it);
  }
  void sync() override { inner_.sync(); }
  void fill_patterns(void* d, std::size_t n, std::span<const std::uint64_t> seeds) override {
    inner_.fill_patterns(d, n, seeds);
  }
  std::uint64_t count_wrong_patterns(const void* b, std::size_t n, std::span<const std::uint64_t> seeds) override {
    return inner_.count_wrong_patterns(b, n, seeds);
  }
  double time_copies(void* d, const void* s, std::size_t n, int k, CopyKind kind, double t) override {
    return inner_.time_copies(d, s, n, k, kind, t);
  }
  void* alloc_pinned(std::size_t n) override { return inner_.alloc_pinned(n); }
  void free_pinned(void* p) override { inner_.free_pinned(p); }
  std::uint64_t copy_async(void* d, const void* s, std::size_t n, CopyDir dir) override {
    return inner_.copy_async(d, s, n, dir);
  }
  bool copy_done(std::uint64_t t) override { return inner_.copy_done(t); }
  std::uint64_t reduce_async(void* d, const void* s, std::size_t n, DType t, Op op) override {
    return inner_.reduce_async(d, s, n, t, op);
  }
  bool reduce_done(std::uint64_t t) override { return inner_.reduce_done(t); }
  Capacity capacity(int local_ranks) override { return inner_.capacity(local_ranks); }
  std::string device_label() override { return inner_.device_label(); }
  std::string device_bus_id() override { return inner_.device_bus_id(); }
  bool ranks_share_device() override { return inner_.ranks_share_device(); }
  void* work_stream() override { return inner_.work_stream(); }

 protected:
  MemoryOps& inner_;
};

// Host memory one rank may still allocate: MemAvailable (/proc/meminfo)
// shared by `local_ranks`, or less when RLIMIT_AS (ulimit -v) leaves less.
MemoryOps::Capacity host_capacity(int local_ranks);

// The operations of a kind, or nullptr when it is not built into this binary.
MemoryOps* memory_ops(MemKind k);
// Called by a kind's translation unit at static-init time: a named kind
// (host, cuda) gives its MemKind; any other its name, getting its MemKind.
void register_memory_ops(MemKind k, MemoryOps* ops);
MemKind register_memory_kind(std::string_view name, MemoryOps* ops);

// Owns a Buffer and frees it through its kind.
class UniqueBuffer {
 public:
  UniqueBuffer() = default;
  UniqueBuffer(MemoryOps* ops, std::size_t bytes) : ops_(ops), buf_(ops->alloc(bytes)) {}
  ~UniqueBuffer() { reset(); }
  UniqueBuffer(UniqueBuffer&& o) noexcept : ops_(o.ops_), buf_(o.buf_) { o.ops_ = nullptr; }
  UniqueBuffer& operator=(UniqueBuffer&& o) noexcept {
    if (this != &o) { reset(); ops_ = o.ops_; buf_ = o.buf_; o.ops_ = nullptr; }
    return *this;
  }
  void reset() { if (ops_) { ops_->free(buf_); ops_ = nullptr; } }
  Buffer& get() { return buf_; }
  const Buffer& get() const { return buf_; }
  void* data() const { return buf_.ptr; }

 private:
  MemoryOps* ops_ = nullptr;
  Buffer buf_;
};

}  // namespace gdr
