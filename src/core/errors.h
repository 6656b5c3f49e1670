// Error types shared by every part of gdrbench.
//
// UsageError means the user asked for something invalid: the program prints
// one line and exits with status 2. RunError means something failed while
// running; its message already names rank, host and the failing call.
#pragma once

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include <time.h>

namespace gdr {

inline constexpr int kExitUsage = 2;
// Not 1: Open MPI's mpirun exits 1 whenever it was interrupted (Ctrl-C) or
// aborted, whatever its ranks returned, so 1 cannot mean "wrong results".
inline constexpr int kExitWrongResults = 4;
inline constexpr int kExitRuntime = 3;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A transport that cannot run one memory kind and path (mpi with device
// memory, direct): the sweep skips those cases with a note.
struct UnsupportedError : UsageError {
  using UsageError::UsageError;
};

struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Raised when a wait passes its deadline; the message says who waited for whom.
struct TimeoutError : RunError {
  using RunError::RunError;
};

// An allocation failed (or could not fit, by the check before the sweep):
// the run asked for more memory than there is, which is bad input (exit 2).
// The message names the size and the memory kind.
struct OutOfMemoryError : RunError {
  using RunError::RunError;
};

// A signal (SIGINT, SIGTERM) asked the run to stop: this rank's, or (on rank
// 0) another rank's, as it told rank 0; `signal` is then that rank's.
struct InterruptedError : RunError {
  explicit InterruptedError(const std::string& what, int sig = 0) : RunError(what), signal(sig) {}
  int signal;
};

// The longest --timeout (a year): steady_clock counts nanoseconds in 64 bits.
inline constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

// The clock deadlines read: monotonic at the kernel tick's resolution (1-4
// ms), read from the vDSO without touching the hardware clock. Why: a wait
// reads it every few hundred spins, and where the clocksource cannot be read
// from user space (HPET in a qemu guest: 2.8 us a syscall there) the precise
// clock was 7-14 syscalls per ping-pong round trip, most of gdrbench's gap to
// ib_write_lat on Soft-RoCE. Timing uses the precise clock.
struct CoarseClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<CoarseClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept {
#ifdef CLOCK_MONOTONIC_COARSE
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
#else
    return time_point(std::chrono::duration_cast<duration>(
        std::chrono::steady_clock::now().time_since_epoch()));
#endif
  }
};

// A point in time after which a wait gives up. Every blocking loop takes one.
class Deadline {
 public:
  using Clock = CoarseClock;
  explicit Deadline(double seconds)
      : seconds_(seconds),
        end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                seconds > 0 ? std::min(seconds, kMaxTimeoutSeconds) : 0.0))) {}
  // A placeholder that reads no clock (WaitLoop sets the real one later).
  static Deadline unset() { return Deadline(); }
  bool expired() const { return Clock::now() >= end_; }
  // Seconds left (negative once expired).
  double remaining() const { return std::chrono::duration<double>(end_ - Clock::now()).count(); }
  double seconds() const { return seconds_; }

 private:
  Deadline() : seconds_(0), end_() {}
  double seconds_;
  Clock::time_point end_;
};

}  // namespace gdr
