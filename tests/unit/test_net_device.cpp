// NetDevice::label(): what /ranks/hca stores for a transport's device().
#include <gtest/gtest.h>

#include "transports/transport.h"

using gdr::NetDevice;

TEST(NetDevice, LabelNamesDeviceAndPort) {
  EXPECT_EQ((NetDevice{"mlx5_0", 1}.label()), "mlx5_0:1");
  EXPECT_EQ((NetDevice{"rxe0", 0}.label()), "rxe0");  // no port known
  EXPECT_EQ((NetDevice{"", 1}.label()), "");          // none named: an empty /ranks/hca entry
  EXPECT_EQ(NetDevice{}.label(), "");
}
