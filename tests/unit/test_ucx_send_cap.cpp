// The UCX transport's cap on device-memory sends in flight (plain logic:
// the transport itself needs two GPUs to show the stall it avoids).
#include <gtest/gtest.h>

#include <cstdlib>

#include "transports/transport.h"
#include "transports/ucx/send_cap.h"
#include "transports/ucx/ucx_settings.h"

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

// GDR_UCX_CUDA_MAX_SENDS reaches the transport through its declared setting.
TEST(UcxSendCap, LimitFromEnvironment) {
  if (!gdr::find_transport("ucx")) GTEST_SKIP() << "built without UCX";
  auto limit = [](const char* v) {
    auto env = [v](const char* name) -> const char* { return std::string(name) == "GDR_UCX_CUDA_MAX_SENDS" ? v : nullptr; };
    return gdr::resolve_settings({}, env, "ucx").get<gdr::UcxSettings>().cuda_max_sends;
  };
  EXPECT_EQ(limit(nullptr), SendCap::kDefault);
  EXPECT_EQ(limit(""), SendCap::kDefault);
  EXPECT_EQ(limit("0"), 0);
  EXPECT_EQ(limit("16"), 16);
  for (const char* bad : {"x", "-1", "8k", "99999999999"})
    try {
      limit(bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const gdr::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("environment GDR_UCX_CUDA_MAX_SENDS="), std::string::npos) << e.what();
    }
}
