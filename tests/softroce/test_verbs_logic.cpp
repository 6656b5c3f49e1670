// The verbs transport's plain logic: --hca parsing, GID choice from a fake
// sysfs port folder, MTU negotiation, credits, chunking, dma-buf alignment,
// the table of operations in flight.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "src/core/errors.h"
#include "transports/verbs/op_table.h"
#include "transports/verbs/verbs_logic.h"

namespace fs = std::filesystem;
using namespace gdr::verbs;

TEST(VerbsHca, ParsesDeviceAndPort) {
  EXPECT_EQ(parse_hca("mlx5_0").device, "mlx5_0");
  EXPECT_EQ(parse_hca("mlx5_0").port, 0);
  EXPECT_EQ(parse_hca("mlx5_1:2").device, "mlx5_1");
  EXPECT_EQ(parse_hca("mlx5_1:2").port, 2);
  EXPECT_THROW(parse_hca("mlx5_0:0"), gdr::UsageError);
  EXPECT_THROW(parse_hca("mlx5_0:x"), gdr::UsageError);
  EXPECT_THROW(parse_hca(":1"), gdr::UsageError);
}

// A port folder laid out as /sys/class/infiniband/<dev>/ports/<p> is.
class VerbsFakePort : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gdr_fake_port_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "gids");
    fs::create_directories(dir_ / "gid_attrs/types");
  }
  void TearDown() override { fs::remove_all(dir_); }
  // type empty: the entry is unpopulated (sysfs gives EINVAL; here: no file).
  void gid(int i, const std::string& value, const std::string& type) {
    std::ofstream(dir_ / "gids" / std::to_string(i)) << value << "\n";
    if (!type.empty()) std::ofstream(dir_ / "gid_attrs/types" / std::to_string(i)) << type << "\n";
  }
  std::string dir() const { return dir_.string(); }
  fs::path dir_;
};

constexpr const char* kZero = "0000:0000:0000:0000:0000:0000:0000:0000";
constexpr const char* kLinkLocal = "fe80:0000:0000:0000:9cea:8bff:fed0:b05a";
constexpr const char* kIpv4 = "0000:0000:0000:0000:0000:ffff:a9fe:0101";  // 169.254.1.1
constexpr const char* kGlobal6 = "2001:0db8:0000:0000:0000:0000:0000:0001";

TEST_F(VerbsFakePort, SoftRoceTableChoosesIndexZero) {
  gid(0, kLinkLocal, "RoCE v2");
  gid(1, kZero, "");
  auto t = read_gid_table(dir());
  ASSERT_EQ(t.size(), 1u);
  ASSERT_TRUE(choose_gid(t));
  EXPECT_EQ(choose_gid(t)->index, 0);
}

TEST_F(VerbsFakePort, MellanoxStyleTablePrefersIpv4RoceV2) {
  gid(0, kLinkLocal, "IB/RoCE v1");
  gid(1, kLinkLocal, "RoCE v2");
  gid(2, kIpv4, "IB/RoCE v1");
  gid(3, kIpv4, "RoCE v2");
  EXPECT_EQ(choose_gid(read_gid_table(dir()))->index, 3);
}

TEST_F(VerbsFakePort, GlobalIpv6BeatsLinkLocal) {
  gid(0, kLinkLocal, "RoCE v2");
  gid(1, kGlobal6, "RoCE v2");
  EXPECT_EQ(choose_gid(read_gid_table(dir()))->index, 1);
}

TEST_F(VerbsFakePort, FirstEntryWhenNoRoceV2) {
  gid(0, kZero, "IB/RoCE v1");
  gid(1, kLinkLocal, "IB/RoCE v1");
  gid(2, kIpv4, "IB/RoCE v1");
  EXPECT_EQ(choose_gid(read_gid_table(dir()))->index, 1);
}

TEST_F(VerbsFakePort, EmptyTableGivesNothing) {
  gid(0, kZero, "");
  EXPECT_FALSE(choose_gid(read_gid_table(dir())));
  EXPECT_FALSE(choose_gid(read_gid_table(dir() + "/missing")));
}

TEST(VerbsGid, Classifies) {
  EXPECT_TRUE(gid_is_ipv4_mapped(kIpv4));
  EXPECT_FALSE(gid_is_ipv4_mapped(kLinkLocal));
  EXPECT_TRUE(gid_is_link_local(kLinkLocal));
}

TEST(VerbsMtu, CommonIsTheSmaller) {
  EXPECT_EQ(mtu_bytes(1), 256);
  EXPECT_EQ(mtu_bytes(3), 1024);
  EXPECT_EQ(mtu_bytes(5), 4096);
  EXPECT_EQ(mtu_bytes(0), 0);
  EXPECT_EQ(common_mtu(5, 3), 3);
  EXPECT_EQ(common_mtu(3, 5), 3);
  EXPECT_EQ(mtu_bytes(common_mtu(4, 4)), 2048);
}

TEST(VerbsCredits, WindowClosesAndReopens) {
  CreditWindow w(4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(w.can_send());
    w.on_send();
  }
  EXPECT_FALSE(w.can_send());
  w.on_returned(2);
  EXPECT_EQ(w.available(), 2u);
  w.on_returned(1);  // stale: ignored
  EXPECT_EQ(w.available(), 2u);
  w.on_returned(9);  // more than was ever sent: ignored
  EXPECT_EQ(w.available(), 2u);
  w.on_returned(4);
  EXPECT_EQ(w.available(), 4u);
}

TEST(VerbsCredits, RepostsAnnouncedInBatches) {
  RepostCounter r(3);
  r.on_repost();
  r.on_repost();
  EXPECT_FALSE(r.should_announce());
  r.on_repost();
  EXPECT_TRUE(r.should_announce());
  EXPECT_EQ(r.announce(), 3u);
  EXPECT_FALSE(r.should_announce());
}

// Sender and receiver each following the rules never exceed the receive queue.
TEST(VerbsCredits, SenderNeverOverrunsReceiver) {
  const std::uint32_t depth = 16;
  CreditWindow w(depth);
  RepostCounter r(4);
  std::uint32_t posted_at_receiver = depth, in_flight = 0;
  std::uint64_t mailbox = 0;
  for (int step = 0; step < 1000; ++step) {
    w.on_returned(mailbox);
    while (w.can_send()) {  // the sender sends all it may
      w.on_send();
      ++in_flight;
    }
    ASSERT_LE(in_flight, posted_at_receiver);
    std::uint32_t arrive = 1 + step % 5;  // some messages land and are reposted
    for (std::uint32_t i = 0; i < arrive && in_flight > 0; ++i) {
      --in_flight;
      r.on_repost();
    }
    if (r.should_announce()) mailbox = r.announce();
  }
}

TEST(VerbsChunks, SplitsAtTheLimit) {
  EXPECT_EQ(chunk_count(0, 8), 1u);
  EXPECT_EQ(chunk_length(0, 8, 0), 0u);
  EXPECT_EQ(chunk_count(8, 8), 1u);
  EXPECT_EQ(chunk_count(10, 4), 3u);
  EXPECT_EQ(chunk_length(10, 4, 0), 4u);
  EXPECT_EQ(chunk_length(10, 4, 2), 2u);
  std::size_t total = 0;
  for (std::size_t i = 0; i < chunk_count(9u << 20, 8u << 20); ++i)
    total += chunk_length(9u << 20, 8u << 20, i);
  EXPECT_EQ(total, 9u << 20);
}

TEST(VerbsDmabuf, RangeIsPageAligned) {
  auto r = page_aligned(0x7f0000001234, 0x10, 0x1000);
  EXPECT_EQ(r.base, 0x7f0000001000u);
  EXPECT_EQ(r.size, 0x1000u);
  EXPECT_EQ(r.offset, 0x234u);
  r = page_aligned(0x7f0000001ff0, 0x20, 0x1000);  // crosses a page boundary
  EXPECT_EQ(r.size, 0x2000u);
  r = page_aligned(0x7f0000002000, 0x3000, 0x1000);  // already aligned
  EXPECT_EQ(r.base, 0x7f0000002000u);
  EXPECT_EQ(r.size, 0x3000u);
  EXPECT_EQ(r.offset, 0u);
}

TEST(VerbsMode, ParsesTheThreeModes) {
  EXPECT_EQ(parse_mode("imm"), Mode::imm);
  EXPECT_EQ(parse_mode("write"), Mode::write);
  EXPECT_EQ(parse_mode("poll"), Mode::poll);
  EXPECT_STREQ(mode_name(Mode::write), "write");
  EXPECT_THROW(parse_mode("Poll"), gdr::UsageError);
  EXPECT_THROW(parse_mode(""), gdr::UsageError);
}

// A completion every `every` WRs, and always at the end of a batch: the
// send queue (depth 256) never holds more than `every` unsignaled WRs.
TEST(VerbsSignals, EveryNthAndTheLastOfABatch) {
  SignalPolicy s(4);
  int signaled = 0;
  for (int i = 0; i < 12; ++i) signaled += s.signal(false);
  EXPECT_EQ(signaled, 3);
  EXPECT_FALSE(s.signal(false));
  EXPECT_TRUE(s.signal(true));   // the batch ends: signaled, and the count restarts
  EXPECT_FALSE(s.signal(false));
  EXPECT_FALSE(s.signal(false));
  EXPECT_FALSE(s.signal(false));
  EXPECT_TRUE(s.signal(false));
  SignalPolicy every(1);  // GDR_VERBS_SIGNAL_EVERY=1: selective signaling off
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(every.signal(false));
}

// The sentinel differs from the byte it replaces, for every byte value.
TEST(VerbsPoll, SentinelNeverEqualsTheStaleByte) {
  for (int b = 0; b < 256; ++b) EXPECT_NE(sentinel_for(static_cast<std::uint8_t>(b)), b);
}

// Ops come and go as a ping-pong's and a window's do, with a few that stay
// alive long: the table agrees with a std::map at every step and grows only
// when a live id would share a slot.
TEST(VerbsOpTable, AgreesWithAMap) {
  IdTable<int> t(4);
  std::map<std::uint64_t, int> ref;
  std::mt19937 rng(7);
  std::uint64_t next = 1;
  for (int step = 0; step < 20000; ++step) {
    if (ref.size() < 40 && rng() % 3 != 0) {
      const int v = static_cast<int>(rng());
      t.insert(next, v);
      ref[next++] = v;
    } else if (!ref.empty()) {
      auto it = ref.begin();
      std::advance(it, rng() % std::min<std::size_t>(ref.size(), step % 500 == 0 ? ref.size() : 8));
      if (it != ref.begin() || rng() % 4 == 0) {  // the oldest stays alive longer
        t.erase(it->first);
        ref.erase(it);
      }
    }
    ASSERT_EQ(t.size(), ref.size());
  }
  for (const auto& [id, v] : ref) {
    ASSERT_NE(t.find(id), nullptr) << id;
    EXPECT_EQ(*t.find(id), v);
  }
  EXPECT_EQ(t.find(next), nullptr);     // never inserted
  EXPECT_EQ(t.find(0), nullptr);        // 0 is no id
  EXPECT_THROW(t.at(next + 1), std::out_of_range);
  EXPECT_GE(t.capacity(), ref.size());
  EXPECT_LE(t.capacity(), 1u << 20);
}

TEST(VerbsOpTable, ErasedIdIsGoneAndItsSlotReused) {
  IdTable<int> t(2);
  t.insert(1, 10);
  t.insert(2, 20);
  t.erase(1);
  EXPECT_EQ(t.find(1), nullptr);
  t.insert(3, 30);  // 3 mod 2 == 1 mod 2: the freed slot, no growth
  EXPECT_EQ(t.capacity(), 2u);
  t.insert(5, 50);  // clashes with the live 3: grows
  EXPECT_EQ(t.at(2), 20);
  EXPECT_EQ(t.at(3), 30);
  EXPECT_EQ(t.at(5), 50);
  EXPECT_EQ(t.size(), 3u);
  t.erase(2);
  t.erase(2);  // twice: no effect
  EXPECT_EQ(t.size(), 2u);
}
