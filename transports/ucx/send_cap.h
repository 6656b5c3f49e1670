// A per-peer cap on device-memory sends in flight, a tuning measured on an
// H200 (2 ranks on one GPU, UCX 1.13 over cuda_ipc): under CUDA
// MPS, 64 rendezvous sends each way at 1 MiB made bibw fall below bw (71-107
// against 100-129 GB/s, three runs); 8, 16 or 32 in flight gave 155-181.
// Without MPS fewer in flight starve the time-sliced GPU (cap 8: bibw 52
// against 131 uncapped at 1 MiB); 32 kept 130. Default 32.
// (The "stall" once blamed on many sends in flight was a rank that stopped
// progressing UCX while its peer still waited for a rendezvous' last
// message; the bootstrap's waits now progress UCX, see ucx_transport.cpp.)
// Sends past the cap are queued in posting order and started as earlier
// ones complete; the tags keep matching exact, so receivers see no change.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace gdr::ucx {

class SendCap {
 public:
  static constexpr int kDefault = 32;

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

 private:
  int limit_;
  std::vector<int> in_flight_;
  std::vector<std::deque<std::uint64_t>> queued_;
};

}  // namespace gdr::ucx
