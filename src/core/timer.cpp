#include "timer.h"

#include <time.h>

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "component_options.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define GDR_HAVE_TSC 1
#endif

namespace gdr {
namespace {

double mono() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double read_cost_ns() {
  constexpr int kReads = 64;
  double t0 = mono(), t = t0;
  for (int i = 0; i < kReads; ++i) t = mono();
  return (t - t0) / kReads * 1e9;
}

#ifdef GDR_HAVE_TSC
// Ticks per second over one spin of `span` seconds, read between clock reads.
double tsc_rate(double span) {
  const double t0 = mono();
  const unsigned long long c0 = __rdtsc();
  double t1 = t0;
  while (t1 - t0 < span) t1 = mono();
  return static_cast<double>(__rdtsc() - c0) / (t1 - t0);
}
#endif

}  // namespace

Timer choose_timer(std::string_view want) {
  Timer t;
  const double cost = read_cost_ns();
  t.what = fmt::format("clock_gettime(CLOCK_MONOTONIC), {:.0f} ns a read", cost);
#ifdef GDR_HAVE_TSC
  if (want == "clock" || (want == "auto" && cost <= kSlowReadNs)) return t;
  // Two 10 ms calibrations must agree within 1 %: a TSC whose rate moves
  // (frequency scaling without constant_tsc) is not used.
  const double r1 = tsc_rate(0.01), r2 = tsc_rate(0.01);
  if (!(r1 > 0) || std::fabs(r1 - r2) > 0.01 * r1) {
    t.what += fmt::format(" (the TSC's rate moved: {:.4g} then {:.4g} GHz)", r1 / 1e9, r2 / 1e9);
    return t;
  }
  t.tsc = true;
  t.origin_s = mono();
  t.ticks0 = __rdtsc();
  t.seconds_per_tick = 2.0 / (r1 + r2);
  t.what = fmt::format("tsc ({:.3f} GHz, calibrated against CLOCK_MONOTONIC, whose read costs {:.0f} ns here{})",
                       (r1 + r2) / 2e9, cost, want == "tsc" ? "; GDR_TIMER=tsc" : "");
#else
  if (want == "tsc") t.what += " (GDR_TIMER=tsc: no TSC on this CPU)";
#endif
  return t;
}

double Timer::now() const {
#ifdef GDR_HAVE_TSC
  if (tsc) return origin_s + static_cast<double>(static_cast<long long>(__rdtsc() - ticks0)) * seconds_per_tick;
#endif
  return mono();
}

namespace {
struct TimerSettings {
  std::string clock = "auto";
};
GDR_REGISTER_OPTIONS(reg_timer_options, declare_options<TimerSettings>(ComponentOptions::Owner::program, "timer", {
    {{"", "GDR_TIMER", "the clock of timed intervals (auto: the TSC where clock_gettime is a syscall)"},
     setting::one_of(&TimerSettings::clock, {"auto", "tsc", "clock"})},
}));

// One clock for the process, chosen on first use: the environment is read
// through the declaration above (`run` refused a bad value at start-up; the
// other commands time nothing that is stored, and take auto then).
const Timer& timer() {
  static const Timer t = [] {
    std::string want = "auto";
    try {
      want = resolve_settings({}, std::getenv, "timer").get<TimerSettings>().clock;
    } catch (const UsageError&) {
    }
    return choose_timer(want);
  }();
  return t;
}
}  // namespace

double timer_now() { return timer().now(); }

std::string timer_description() { return timer().what; }

}  // namespace gdr
