// The clock of the timed intervals. clock_gettime(CLOCK_MONOTONIC) is a
// vDSO read of the TSC on most hosts (~20 ns), but a syscall where the
// kernel's clocksource cannot be read from user space: 2.8 us a read in the
// Soft-RoCE qemu guest (HPET), 5 % of a round trip that ib_write_lat times
// with rdtsc. There (GDR_TIMER=auto, when a read costs more than
// kSlowReadNs) the intervals are read from the TSC instead, its rate
// calibrated against CLOCK_MONOTONIC at the first read; `timer_description`
// says which one a run used (the `timer` fact).
#pragma once

#include <string>
#include <string_view>

namespace gdr {

inline constexpr double kSlowReadNs = 300;  // a vDSO read is ~20-60 ns, a syscall microseconds

// One clock: CLOCK_MONOTONIC, or the TSC scaled to its seconds.
struct Timer {
  bool tsc = false;
  double origin_s = 0;  // CLOCK_MONOTONIC at ticks0
  unsigned long long ticks0 = 0;
  double seconds_per_tick = 0;
  std::string what;  // timer_description()
  double now() const;
};
// The clock GDR_TIMER=`want` (auto, tsc or clock) gives on this machine.
Timer choose_timer(std::string_view want);

// Seconds from an arbitrary origin, monotonic within the process.
double timer_now();
// "clock_gettime(CLOCK_MONOTONIC), 24 ns a read" or "tsc (2.10 GHz, ...)".
std::string timer_description();

}  // namespace gdr
