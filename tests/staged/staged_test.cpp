// The staged path on a CPU machine: the real staging wrapper over the real
// mpi transport, moving host memory through "pinned" host slots, so the
// chunking, the slot reuse and the per-peer ordering run without a GPU.
//
// Two host kinds drive it: the host kind itself (its copies finish at once)
// and a host kind whose copies finish only after being polled a few times,
// as a DMA engine's would, so chunks really sit in the copy stage while
// others are on the wire.
//
// Run under mpirun with 2 or more ranks. Prints one line per check; exits 1
// when any rank saw a failure.
#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/test.h"
#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "transports/staged/staged_transport.h"
#include "transports/transport.h"

namespace gdr {
namespace {

int g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    fmt::print("FAIL: {}\n", what);
  }
}

// Host memory whose background copies complete only after `lag` polls, in
// issue order per direction (like one copy stream per direction).
class LaggingHostMemory final : public ForwardingMemory {
 public:
  explicit LaggingHostMemory(int lag) : ForwardingMemory(*memory_ops(MemKind::host)), lag_(lag) {}
  void sync() override {}

  std::uint64_t copy_async(void* dst, const void* src, std::size_t n, CopyDir dir) override {
    std::uint64_t t = next_++;
    queues_[static_cast<int>(dir)].push_back(t);
    pending_[t] = {dst, src, n, lag_, static_cast<int>(dir)};
    ++in_flight_;
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    return t;
  }
  // The copy happens when it completes, so data read early would be stale.
  bool copy_done(std::uint64_t t) override {
    Pending& p = pending_.at(t);
    if (p.polls_left > 0 && --p.polls_left > 0) return false;
    auto& q = queues_[p.dir];
    if (q.front() != t) return false;  // an earlier copy in this direction is still running
    std::memcpy(p.dst, p.src, p.n);
    q.pop_front();
    pending_.erase(t);
    --in_flight_;
    return true;
  }
  int max_in_flight() const { return max_in_flight_; }

 private:
  struct Pending {
    void* dst;
    const void* src;
    std::size_t n;
    int polls_left, dir;
  };
  int lag_;
  std::uint64_t next_ = 1;
  std::map<std::uint64_t, Pending> pending_;
  std::deque<std::uint64_t> queues_[2];
  int in_flight_ = 0, max_in_flight_ = 0;
};

std::unique_ptr<Transport> staged_over(const char* inner, Bootstrap& boot, MemoryOps& mem,
                                       StagingConfig cfg, const std::vector<int>& peers) {
  auto t = make_staged_transport(find_transport(inner)->create(boot, Settings{}), boot, mem, cfg);
  t->connect(peers);
  return t;
}

std::unique_ptr<Transport> staged_mpi(Bootstrap& boot, MemoryOps& mem, StagingConfig cfg,
                                      const std::vector<int>& peers) {
  return staged_over("mpi", boot, mem, cfg, peers);
}

// Host memory whose `nth` staging copy into user memory (from_host) after
// arm() flips the first byte it writes: a fault between the wire and the
// receiver's buffer, which only the receiver's check can see.
class CorruptingHostMemory final : public ForwardingMemory {
 public:
  CorruptingHostMemory() : ForwardingMemory(*memory_ops(MemKind::host)) {}
  std::uint64_t copy_async(void* dst, const void* src, std::size_t n, CopyDir dir) override {
    std::uint64_t t = inner_.copy_async(dst, src, n, dir);
    if (dir == CopyDir::from_host && n > 0 && ++seen_ == nth_) *static_cast<unsigned char*>(dst) ^= 0xff;
    return t;
  }
  void arm(int nth) {
    nth_ = nth;
    seen_ = 0;
  }

 private:
  int nth_ = 0, seen_ = 0;
};

std::byte pattern(int from, int msg, std::size_t i) {
  return static_cast<std::byte>((from * 131 + msg * 31 + i * 7 + (i >> 8)) & 0xff);
}

// Every rank sends a train of messages of many lengths to both ring
// neighbours at once and receives theirs; checks every byte.
void exchange(Bootstrap& boot, MemoryOps& mem, StagingConfig cfg, const std::string& label) {
  const int n = boot.size(), me = boot.rank();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<int> peers = right == left ? std::vector<int>{right} : std::vector<int>{left, right};
  auto t = staged_mpi(boot, mem, cfg, peers);
  const std::size_t C = cfg.chunk_bytes;
  const std::vector<std::size_t> lens = {0, 1, 7, C - 1, C, C + 1, 3 * C + 5, 17 * C + 3, 2, C * 2};
  std::size_t total = 0;
  for (auto l : lens) total += l;
  UniqueBuffer out(&mem, total + 1), in_l(&mem, total + 1), in_r(&mem, total + 1);
  auto* o = static_cast<std::byte*>(out.data());
  auto ro = t->register_memory(out.get()), rl = t->register_memory(in_l.get()),
       rr = t->register_memory(in_r.get());
  std::vector<Request> reqs;
  std::size_t off = 0;
  for (std::size_t m = 0; m < lens.size(); ++m) {
    for (std::size_t i = 0; i < lens[m]; ++i) o[off + i] = pattern(me, static_cast<int>(m), i);
    // Interleave the directions and peers, receives first on even ranks.
    if (me % 2 == 0) {
      reqs.push_back(t->post_recv(left, *rl, off, lens[m]));
      if (right != left) reqs.push_back(t->post_recv(right, *rr, off, lens[m]));
    }
    reqs.push_back(t->post_send(right, *ro, off, lens[m]));
    if (right != left) reqs.push_back(t->post_send(left, *ro, off, lens[m]));
    if (me % 2 == 1) {
      reqs.push_back(t->post_recv(left, *rl, off, lens[m]));
      if (right != left) reqs.push_back(t->post_recv(right, *rr, off, lens[m]));
    }
    off += lens[m];
  }
  // Waited in reverse: completion must not depend on the order of test().
  std::vector<Request> rev(reqs.rbegin(), reqs.rend());
  wait_all(*t, rev, boot);
  std::size_t bad = 0;
  off = 0;
  for (std::size_t m = 0; m < lens.size(); ++m) {
    for (std::size_t i = 0; i < lens[m]; ++i) {
      bad += static_cast<std::byte*>(in_l.data())[off + i] != pattern(left, static_cast<int>(m), i);
      if (right != left)
        bad += static_cast<std::byte*>(in_r.data())[off + i] != pattern(right, static_cast<int>(m), i);
    }
    off += lens[m];
  }
  expect(bad == 0, fmt::format("{}: {} wrong bytes in the exchange ({})", boot.me(), bad, label));
  // Staging memory is fixed by the configuration, not by message sizes.
  std::size_t pinned = 0;
  for (auto& [k, v] : t->describe())
    if (k == "staged.pinned_bytes") pinned = std::stoull(v);
  std::size_t slots = std::max(cfg.slots, 2);
  expect(pinned == std::max<std::size_t>(2 * slots * C * peers.size(), 4096),
         fmt::format("{}: staging pool is {} B, expected 2 x {} slots x {} B x {} peers ({})",
                     boot.me(), pinned, slots, C, peers.size(), label));
}

// Our ring allreduce over the staged mpi transport, every datatype and op.
const Settings kNoSettings;  // the tests' defaults

void allreduce(Bootstrap& boot, MemoryOps& mem, StagingConfig cfg, std::size_t bytes,
               std::size_t ring_chunk, const std::string& label) {
  const int n = boot.size(), me = boot.rank();
  std::vector<int> peers;
  if (n > 1) peers = {(me + n - 1) % n, (me + 1) % n};
  if (n == 2) peers = {(me + 1) % n};
  auto t = staged_mpi(boot, mem, cfg, peers);
  auto test = find_test("allreduce")->create();
  TestEnv env{boot, t.get(), mem, kNoSettings};
  test->prepare(env, bytes);
  for (DType d : kAllDTypes)
    for (Op op : kAllOps) {
      CaseParams c;
      c.test = "allreduce";
      c.traits = find_test("allreduce")->traits;
      c.dtype = d;
      c.op = op;
      c.count = bytes / dtype_size(d);
      c.bytes = c.count * dtype_size(d);
      c.iters = 2;
      c.warmup = 1;
      c.chunk_bytes = ring_chunk;
      std::uint64_t wrong = test->run(env, c).wrong;
      expect(wrong == 0, fmt::format("{}: allreduce {} {} {} B: {} wrong elements ({})", boot.me(),
                                     dtype_name(d), op_name(op), c.bytes, wrong, label));
    }
}

// The p2p tests through staging over `inner`: every byte of every message
// checked (none wrong); with `spoiled`, one staging copy per case spoils a
// received byte, which the receiver must count (on one rank of the pair).
void p2p(Bootstrap& boot, MemoryOps& mem, StagingConfig cfg, const std::string& label,
         const char* inner = "mpi", CorruptingHostMemory* spoiled = nullptr) {
  const int n = boot.size(), me = boot.rank();
  std::vector<int> peers;
  if (me == 0) peers = {n / 2};
  if (me == n / 2) peers = {0};
  auto t = staged_over(inner, boot, mem, cfg, peers);
  for (const char* name : {"latency", "bw", "bibw"}) {
    auto test = find_test(name)->create();
    TestEnv env{boot, t.get(), mem, kNoSettings};
    test->prepare(env, 5 * cfg.chunk_bytes + 3);
    CaseParams c;
    c.test = name;
    c.traits = find_test(name)->traits;
    c.has_dtype = false;
    c.bytes = c.count = 5 * cfg.chunk_bytes + 3;
    c.iters = 3;
    c.warmup = 1;
    c.window = 8;
    c.check = CheckMode::every;  // the spoiled copy lands in a timed message
    c.src = 0;
    c.dst = n / 2;
    find_test(name)->complete(c, c.bytes, n);
    // Messages of 6 chunks. Spoil a chunk of the first timed message, past
    // the warm-up (latency: its lead and round trip, 12 copies, then the
    // timed batch's lead, 6 more, which round trip 0 overwrites; bw and
    // bibw: the warm-up lead message and window, 54 copies on a receiving
    // rank, then the timed lead, 6 more; 68 is the second timed message).
    if (spoiled) spoiled->arm(std::string_view(name) == "latency" ? 20 : 68);
    CaseOutcome out = test->run(env, c);
    expect(out.times.size() == 3, fmt::format("{}: {} over staged {} returned {} times ({})",
                                              boot.me(), name, inner, out.times.size(), label));
    std::uint64_t wrong = static_cast<std::uint64_t>(boot.allreduce_max(static_cast<int>(out.wrong)));
    if (!spoiled)
      expect(wrong == 0, fmt::format("{}: {} over staged {}: {} wrong bytes ({})", boot.me(), name, inner,
                                     wrong, label));
    else
      expect(wrong >= 1, fmt::format("{}: {} over staged {}: a spoiled byte went unnoticed ({})", boot.me(),
                                     name, inner, label));
  }
}

void errors_name_the_peer(Bootstrap& boot, MemoryOps& mem) {
  auto t = staged_mpi(boot, mem, StagingConfig{4096, 2}, {});
  UniqueBuffer b(&mem, 64);
  auto r = t->register_memory(b.get());
  std::string what;
  try {
    t->post_send(boot.size() - 1, *r, 0, 8);
  } catch (const RunError& e) {
    what = e.what();
  }
  expect(what.find(boot.who(boot.size() - 1)) != std::string::npos && what.find(boot.me()) != std::string::npos,
         fmt::format("{}: a send to an unconnected peer should name both ranks, got '{}'", boot.me(), what));
}

}  // namespace
}  // namespace gdr

int main(int argc, char** argv) {
  using namespace gdr;
  Bootstrap boot(&argc, &argv, 60);
  MemoryOps& host = *memory_ops(MemKind::host);
  LaggingHostMemory lagging(3);
  try {
    for (std::size_t chunk : {64ul, 1000ul, 4096ul})
      for (int slots : {2, 3, 4}) {
        std::string label = fmt::format("chunk {} slots {}", chunk, slots);
        exchange(boot, host, {chunk, slots}, "host, " + label);
        exchange(boot, lagging, {chunk, slots}, "lagging copies, " + label);
      }
    expect(lagging.max_in_flight() >= 2,
           fmt::format("{}: at most {} staging copies were ever in flight; the pipeline needs 2",
                       boot.me(), lagging.max_in_flight()));
    allreduce(boot, host, {4096, 2}, 96 * 1024 + 24, 10000, "host, chunk 4096 slots 2");
    allreduce(boot, lagging, {1000, 3}, 50 * 1024 + 40, 4096, "lagging copies, chunk 1000 slots 3");
    p2p(boot, host, {4096, 2}, "host");
    p2p(boot, lagging, {1000, 4}, "lagging copies");
    // The latency warm-up's lead and its round trip, and bw's warm-up window
    // of 8 messages x 6 chunks, come first: spoil a copy well past them.
    CorruptingHostMemory spoiling;
    p2p(boot, spoiling, {1000, 3}, "one spoiled staging copy", "mpi", &spoiling);
    if (find_transport("ucx") && find_transport("ucx")->unavailable_reason().empty()) {
      p2p(boot, lagging, {1000, 4}, "lagging copies", "ucx");
      p2p(boot, spoiling, {1000, 3}, "one spoiled staging copy", "ucx", &spoiling);
    }
    errors_name_the_peer(boot, host);
  } catch (const std::exception& e) {
    expect(false, fmt::format("{}: unexpected error: {}", boot.me(), e.what()));
    boot.abort(e.what(), 1);
  }
  int failed = boot.allreduce_max(g_failures > 0 ? 1 : 0);
  if (boot.rank() == 0) fmt::print("staged path tests on {} ranks: {}\n", boot.size(), failed ? "FAILED" : "passed");
  return failed;
}
