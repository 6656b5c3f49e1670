// The UCX transport's cap on device-memory sends in flight (plain logic:
// the transport itself needs two GPUs to show the stall it avoids).
#include <gtest/gtest.h>

#include <cstdlib>

#include "transports/ucx/send_cap.h"

using gdr::ucx::SendCap;

TEST(UcxSendCap, DefersPastTheLimitAndReleasesInOrder) {
  SendCap cap(2, 2);
  EXPECT_FALSE(cap.must_defer(1));
  cap.started(1);
  cap.started(1);
  EXPECT_TRUE(cap.must_defer(1));
  EXPECT_FALSE(cap.must_defer(0));  // per peer
  cap.defer(1, 10);
  cap.defer(1, 11);
  EXPECT_FALSE(cap.next(1).has_value());  // still 2 in flight
  cap.finished(1);
  EXPECT_EQ(cap.next(1), 10u);
  cap.started(1);
  EXPECT_FALSE(cap.next(1).has_value());
  cap.finished(1);
  cap.finished(1);
  EXPECT_EQ(cap.next(1), 11u);
  EXPECT_FALSE(cap.next(1).has_value());  // queue empty
}

TEST(UcxSendCap, QueuedSendsKeepNewOnesBehindThem) {
  SendCap cap(1, 1);
  cap.started(0);
  cap.defer(0, 5);
  cap.finished(0);
  // Room again, but an older send waits: a new one must queue behind it.
  EXPECT_TRUE(cap.must_defer(0));
}

TEST(UcxSendCap, ZeroMeansNoCap) {
  SendCap cap(1, 0);
  for (int i = 0; i < 1000; ++i) cap.started(0);
  EXPECT_FALSE(cap.must_defer(0));
}

TEST(UcxSendCap, LimitFromEnvironment) {
  std::string err;
  unsetenv("GDR_UCX_CUDA_MAX_SENDS");
  EXPECT_EQ(SendCap::limit_from_env(&err), SendCap::kDefault);
  setenv("GDR_UCX_CUDA_MAX_SENDS", "0", 1);
  EXPECT_EQ(SendCap::limit_from_env(&err), 0);
  setenv("GDR_UCX_CUDA_MAX_SENDS", "16", 1);
  EXPECT_EQ(SendCap::limit_from_env(&err), 16);
  for (const char* bad : {"x", "-1", "8k", "99999999999"}) {
    setenv("GDR_UCX_CUDA_MAX_SENDS", bad, 1);
    EXPECT_FALSE(SendCap::limit_from_env(&err).has_value()) << bad;
    EXPECT_NE(err.find("GDR_UCX_CUDA_MAX_SENDS"), std::string::npos);
  }
  unsetenv("GDR_UCX_CUDA_MAX_SENDS");
}
