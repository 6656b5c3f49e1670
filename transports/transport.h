// The transport interface: the only thing collectives see of a wire.
//
// Shaped like Gloo's Device/Context/Pair: a transport connects to a set of
// peers, registers buffers, and moves byte ranges (offset, length) of
// registered buffers between peers. Operations are non-blocking and
// matched in posting order per (peer, direction): the k-th send to a peer
// lands in the k-th receive that peer posted from us, and must have the
// same length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/component_options.h"
#include "src/memory/memory.h"

namespace gdr {

class Bootstrap;

// How a test moves device memory: the transport touches it itself, or it is
// staged through pinned host buffers (transports/staged).
enum class Path { direct, staged };
std::string_view path_name(Path p);
Path parse_path(std::string_view s);  // throws UsageError

// What moved one case's bytes, as the library reports it: not
// what was asked. `links` names the hardware the bytes crossed, for the
// ceiling (src/core/ceiling.h): "hca:mlx5_0:1" (an RDMA port), "gpu" (this
// rank's GPU over PCIe), "copy-d2d", "copy-d2h", "copy-h2d" (the GPU's copy
// engines, measured by the copy rows), "shm" (host shared memory: no
// ceiling is known), "tcp".
struct PathTaken {
  std::string how;        // one line, e.g. "rndv cma/memory; eager <= 8256 B sysv/memory"
  bool via_host = false;  // device-memory bytes passed through host memory
  std::string cause;      // why, when via_host (names the library's choice)
  std::vector<std::string> links;
  // Non-empty when what moved the bytes cannot be established (the library
  // does not say): why. Such a row never claims GPUDirect.
  std::string unknown;
};

// The network device a transport's bytes leave through, for /ranks/hca of
// the results: an RDMA port ("mlx5_0", port 1). Empty name: none named.
struct NetDevice {
  std::string name;
  int port = 0;  // 0: no port
  // "mlx5_0:1", "mlx5_0" without a port, "" for none.
  std::string label() const { return name.empty() || port == 0 ? name : name + ":" + std::to_string(port); }
};

// A registered buffer. Transports subclass it to keep their keys.
class MemRegion {
 public:
  explicit MemRegion(Buffer b) : buf_(b) {}
  virtual ~MemRegion() = default;
  const Buffer& buffer() const { return buf_; }
  std::byte* at(std::size_t off) const { return static_cast<std::byte*>(buf_.ptr) + off; }

 private:
  Buffer buf_;
};

// An outstanding operation; `id` is the transport's own handle.
struct Request {
  std::uint64_t id = 0;
  int peer = -1;
  bool is_send = false;
  std::size_t bytes = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;
  // Whether `direct` transfers of this memory kind work (host always should).
  virtual bool supports(MemKind k) const = 0;
  // Why `direct` transfers of `k` do not work (for the error); empty when unknown.
  virtual std::string unsupported_reason(MemKind) const { return {}; }
  // Collective: every rank calls it with the peers it will talk to (may be
  // empty). Endpoint blobs travel through the bootstrap.
  virtual void connect(const std::vector<int>& peers) = 0;
  // Collective over all ranks, same order everywhere (sizes may differ), so
  // one-sided transports may exchange keys. Set-up work: never timed.
  virtual std::unique_ptr<MemRegion> register_memory(const Buffer& b) = 0;
  virtual Request post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) = 0;
  virtual Request post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) = 0;
  // Starts what was posted so far without waiting for any of it; test()
  // does too. Callers that post several receives and then block elsewhere
  // (a barrier) call it first (verbs: the receives' clear-to-sends leave
  // then, as few control SENDs as fit).
  virtual void start_posted() {}
  // Whether the latency test posts a batch's receives before it starts (as an
  // application with receives waiting would), or each when osu_latency does.
  // Verbs needs them early (its sender waits for the receiver's buffer); the
  // MPI over UCX pays ~8 % of 8 B device latency for 64 of them posted, UCX
  // itself ~5 % (both say false).
  virtual bool latency_preposts_receives() const { return true; }
  // Makes progress; true once `req` has completed (then it is forgotten).
  // Throws RunError naming the peer when the operation failed.
  virtual bool test(const Request& req) = 0;
  // How this transport moves `k` memory, when it has several ways (verbs:
  // imm, write, poll); stored with each row. Empty: one way only.
  virtual std::string mode(MemKind) const { return {}; }
  // Facts to store with the results ("ucx.version" -> "1.13.1", registration mode...).
  virtual std::vector<std::pair<std::string, std::string>> describe() const { return {}; }
  // The device it moves bytes through (after connect()); none by default.
  virtual NetDevice device() const { return {}; }
  // What moves `bytes` of `mem` memory to `peer` (after connect()); empty
  // `how` when the transport cannot tell.
  virtual PathTaken path_taken(MemKind, std::size_t /*bytes*/, int /*peer*/) const { return {}; }
  // After a wait for `peer` timed out: this side's protocol state with it, for
  // the message (what was sent, what arrived, what flow control holds back).
  virtual std::string stall_detail(int /*peer*/) const { return {}; }
};

// Waits for all of `reqs` with the bootstrap's timeout. On timeout throws
// TimeoutError naming this rank, the peer it waited for and activity().
void wait_all(Transport& t, std::span<const Request> reqs, const Bootstrap& boot);
void wait_one(Transport& t, const Request& req, const Bootstrap& boot);
// The same loop over a set that grows (the concurrent patterns'): on_done(i)
// runs as reqs[i] completes and may append to reqs, and to done with it
// (0 pending, 1 done); yield: give the CPU up between polls (more ranks than cores).
void wait_all(Transport& t, std::vector<Request>& reqs, std::vector<char>& done, const Bootstrap& boot,
              const std::function<void(std::size_t)>& on_done, bool yield);

// Registry: a transport folder adds one line `GDR_REGISTER_TRANSPORT(...)`.
struct TransportInfo {
  std::string name;
  std::string description;
  // Empty when usable on this machine, else the reason.
  std::function<std::string()> unavailable_reason;
  // Creates the transport with the run's settings (it reads its own struct,
  // declared with GDR_REGISTER_OPTIONS in its folder; no memory kind: regions
  // bring theirs to register_memory). The staged path needs only host
  // support: make_transport wraps it.
  std::function<std::unique_ptr<Transport>(Bootstrap&, const Settings&)> create;
  // For `gdrbench list` and the check before a run: empty when `direct`
  // transfers of memory kind `mem` (never host) can work here, else why
  // not. Unset: not known until a run tries.
  std::function<std::string(MemKind mem)> device_memory_reason = {};
  // The NIC this transport's own settings bind the rank to ("mlx5_0:1" from
  // verbs' --hca, or its twin GDR_VERBS_HCA; the flag wins), "" when they
  // name none. The host-rounds pattern pairs ranks by it (rails). Unset: none.
  std::function<std::string(const Settings&)> bound_device = {};
};
std::vector<TransportInfo>& transport_registry();
const TransportInfo* find_transport(std::string_view name);
// The transport to run `name` on `mem` memory over `path`: the registered
// transport itself for direct, or it wrapped in the host-staging layer.
// Throws UsageError when the combination cannot run here, saying why.
std::unique_ptr<Transport> make_transport(std::string_view name, Bootstrap& boot, MemKind mem,
                                          Path path, const Settings& settings);
// Set by transports/staged when built: wraps a host-capable transport so it
// moves `mem` memory through pinned host buffers.
using StagingFactory = std::function<std::unique_ptr<Transport>(std::unique_ptr<Transport>, Bootstrap&,
                                                                MemoryOps&, const Settings&)>;
StagingFactory& staging_factory();
// Set by transports/staged beside its factory: the pinned host bytes one
// staged transport holds to reach `peers` peers (the out-of-memory check).
std::function<std::size_t(std::size_t peers, const Settings&)>& staging_host_bytes();

struct TransportRegistrar {
  explicit TransportRegistrar(TransportInfo info);
};
#define GDR_REGISTER_TRANSPORT(var, ...) \
  static ::gdr::TransportRegistrar var { ::gdr::TransportInfo{__VA_ARGS__} }

}  // namespace gdr
