// The timer of the timed intervals (src/core/timer.h), forced onto the TSC
// as GDR_TIMER=tsc does: its seconds must be CLOCK_MONOTONIC's seconds
// (the calibration), and it must never run backwards.
#include <gtest/gtest.h>
#include <time.h>

#include "src/core/timer.h"

using namespace gdr;

namespace {
double mono() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
}  // namespace

TEST(Timer, TscKeepsMonotonicSeconds) {
  const Timer timer = choose_timer("tsc");
  const double t0 = timer.now(), m0 = mono();
#if defined(__x86_64__)
  EXPECT_TRUE(timer.tsc) << timer.what;
  EXPECT_EQ(timer.what.rfind("tsc (", 0), 0u) << timer.what;
#endif
  EXPECT_NEAR(t0, m0, 0.01);  // the same origin
  double last = t0;
  while (mono() - m0 < 0.05) {
    const double t = timer.now();
    ASSERT_GE(t, last);
    last = t;
  }
  const double dt = timer.now() - t0, dm = mono() - m0;
  EXPECT_NEAR(dt, dm, 0.02 * dm) << timer.what;
}

TEST(Timer, ClockOnRequest) {
  const Timer timer = choose_timer("clock");
  EXPECT_FALSE(timer.tsc);
  EXPECT_EQ(timer.what.rfind("clock_gettime(CLOCK_MONOTONIC), ", 0), 0u) << timer.what;
  EXPECT_NEAR(timer.now(), mono(), 0.01);  // the same clock
}
