// A per-peer cap on device-memory sends in flight. UCX 1.13 over cuda_ipc
// (two GPUs on NVLink) stalls for good when about 64 rendezvous sends of
// 16-32 KiB are outstanding each way (bibw with OSU's window of 64: the
// sends sit in ucp_proto_progress_tag_rndv_rts, with UCX_RNDV_SCHEME=
// put_zcopy too); with 8 in flight per peer it never did, and it reached
// the same bandwidth as NCCL's send/recv (results/archive, 2 x H200).
// Sends past the cap are queued in posting order and started as earlier
// ones complete; the tags keep matching exact, so receivers see no change.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace gdr::ucx {

class SendCap {
 public:
  static constexpr int kDefault = 0;

  // limit <= 0: no cap.
  SendCap(int peers, int limit) : limit_(limit), in_flight_(peers, 0), queued_(peers) {}

  int limit() const { return limit_; }
  // True when a new send to `peer` must wait its turn (also behind queued ones).
  bool must_defer(int peer) const {
    return limit_ > 0 && (in_flight_[peer] >= limit_ || !queued_[peer].empty());
  }
  void defer(int peer, std::uint64_t id) { queued_[peer].push_back(id); }
  void started(int peer) { ++in_flight_[peer]; }
  void finished(int peer) { --in_flight_[peer]; }
  // The next queued send that may start now, taken off the queue.
  std::optional<std::uint64_t> next(int peer) {
    if (queued_[peer].empty() || (limit_ > 0 && in_flight_[peer] >= limit_)) return std::nullopt;
    std::uint64_t id = queued_[peer].front();
    queued_[peer].pop_front();
    return id;
  }

  // GDR_UCX_CUDA_MAX_SENDS: a whole number >= 0 (0 = no cap); unset: kDefault.
  // Returns the limit, or the error text for a bad value.
  static std::optional<int> limit_from_env(std::string* error) {
    const char* v = std::getenv("GDR_UCX_CUDA_MAX_SENDS");
    if (!v || !*v) return kDefault;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 0 || n > 1'000'000) {
      *error = std::string("GDR_UCX_CUDA_MAX_SENDS='") + v + "': use a whole number >= 0 (0 = no cap)";
      return std::nullopt;
    }
    return static_cast<int>(n);
  }

 private:
  int limit_;
  std::vector<int> in_flight_;
  std::vector<std::deque<std::uint64_t>> queued_;
};

}  // namespace gdr::ucx
