// The parts of the verbs transport that are plain logic, kept apart from
// libibverbs so unit tests can run them anywhere: --hca parsing, GID choice
// from a sysfs port folder, MTU negotiation, credits and chunking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdr::verbs {

// "--hca mlx5_0" or "--hca mlx5_0:2"; port 0 means "first ACTIVE port".
struct HcaSpec {
  std::string device;
  int port = 0;
};
HcaSpec parse_hca(std::string_view s);  // throws UsageError

// One populated entry of a port's GID table, as sysfs shows it.
struct GidEntry {
  int index = -1;
  std::string gid;   // "fe80:0000:...", as in ports/<p>/gids/<i>
  std::string type;  // "RoCE v2", "IB/RoCE v1"
};
// Reads ports/<p>/gids/<i> and gid_attrs/types/<i> under `port_dir`
// (/sys/class/infiniband/<dev>/ports/<p>), skipping empty and zero GIDs.
std::vector<GidEntry> read_gid_table(const std::string& port_dir);

// The default GID: a RoCE v2 entry, preferring an IPv4-mapped address, then
// a global IPv6 one, then link-local (routable before L2-only). When the
// port has no RoCE v2 entry, the first populated one. nullopt: table empty.
std::optional<GidEntry> choose_gid(const std::vector<GidEntry>& table);
bool gid_is_ipv4_mapped(std::string_view gid);
bool gid_is_link_local(std::string_view gid);

// MTUs as libibverbs encodes them (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5).
int mtu_bytes(int ibv_mtu);
// The path MTU two ports share: the smaller of their active MTUs.
int common_mtu(int mine, int theirs);

// Flow control for one direction of a queue pair. Every message that
// consumes a receive WQE at the peer (control SEND, data WRITE WITH IMM)
// needs a credit; the peer reposts its WQEs and reports how many it has
// reposted in total, so the window reopens. A sender never has more than
// `window` such messages unreposted at the peer, so it never overruns it.
class CreditWindow {
 public:
  explicit CreditWindow(std::uint32_t window = 0) : window_(window) {}
  std::uint32_t available() const {
    return window_ - static_cast<std::uint32_t>(sent_ - returned_);
  }
  bool can_send() const { return available() > 0; }
  void on_send() { ++sent_; }
  // `reposted` is the peer's running total; stale or repeated values are ignored.
  void on_returned(std::uint64_t reposted) {
    if (reposted > returned_ && reposted <= sent_) returned_ = reposted;
  }
  std::uint64_t sent() const { return sent_; }
  std::uint32_t window() const { return window_; }

 private:
  std::uint32_t window_;
  std::uint64_t sent_ = 0, returned_ = 0;
};

// The receiving side's count of reposted WQEs, and when to tell the peer:
// once `batch` repostings are untold, so the sender's window stays mostly open
// and the update costs one small RDMA WRITE per batch.
class RepostCounter {
 public:
  explicit RepostCounter(std::uint32_t batch = 1) : batch_(batch ? batch : 1) {}
  void on_repost() { ++reposted_; }
  bool should_announce() const { return reposted_ - announced_ >= batch_; }
  std::uint64_t announce() { return announced_ = reposted_; }
  std::uint64_t reposted() const { return reposted_; }

 private:
  std::uint32_t batch_;
  std::uint64_t reposted_ = 0, announced_ = 0;
};

// How the receiver learns that a message arrived (--verbs-mode):
//  imm:   every chunk is an RDMA WRITE WITH IMM; the receiver polls its CQ
//         (the shape of ib_send_bw / ib_send_lat).
//  write: plain RDMA WRITEs; only the last message of each burst the sender
//         posts carries an immediate, which completes every receive up to it
//         (RC places WRITEs in order): one completion per window, as
//         ib_write_bw's passive receiver.
//  poll:  plain RDMA WRITEs; the receiver polls the last byte of its buffer,
//         which it set to a sentinel before advertising it (ib_write_lat). Host
//         memory only: a receive into device memory falls back to imm.
enum class Mode { imm, write, poll };
Mode parse_mode(std::string_view s);  // throws UsageError
const char* mode_name(Mode m);

// Selective signaling: a send WR asks for a completion when it is the last
// of a posting batch (someone waits for it) or when `every` WRs have gone
// unsignaled (the send queue must be reaped before it fills).
class SignalPolicy {
 public:
  explicit SignalPolicy(std::uint32_t every = 1) : every_(every ? every : 1) {}
  bool signal(bool last_of_batch) {
    if (last_of_batch || ++unsignaled_ >= every_) {
      unsignaled_ = 0;
      return true;
    }
    return false;
  }
  std::uint32_t every() const { return every_; }

 private:
  std::uint32_t every_;
  std::uint32_t unsignaled_ = 0;
};

// poll mode: the sentinel a receiver stores in the last byte of its range
// before advertising it: anything but the byte there now, so a stale buffer
// never reads as arrived. The sender compares its own last byte with it and,
// when they are equal, sends that message with an immediate instead.
inline std::uint8_t sentinel_for(std::uint8_t current) {
  return static_cast<std::uint8_t>(~current);
}

// A message longer than the largest the devices accept goes as several
// WRITE WITH IMM chunks; a zero-length message is one empty chunk.
inline std::size_t chunk_count(std::size_t len, std::size_t chunk) {
  return len == 0 ? 1 : (len + chunk - 1) / chunk;
}
inline std::size_t chunk_length(std::size_t len, std::size_t chunk, std::size_t i) {
  std::size_t start = i * chunk;
  return start >= len ? 0 : (len - start < chunk ? len - start : chunk);
}

// A host-page-aligned range covering [addr, addr+len), as
// cuMemGetHandleForAddressRange requires; `offset` is addr's place in it.
struct AlignedRange {
  std::uint64_t base = 0, size = 0, offset = 0;
};
AlignedRange page_aligned(std::uint64_t addr, std::uint64_t len, std::uint64_t page);

}  // namespace gdr::verbs
