// One contract, every transport (as Gloo runs every test over every
// transport): each registered transport that is usable here, direct and
// staged (through the real staging wrapper over host memory), is driven
// through what transports/transport.h promises:
//   - posting-order matching with many messages in flight, every byte checked;
//   - zero-length and odd-length messages;
//   - a wait that times out names the peer it waited for, and the request
//     still completes once the peer sends;
//   - a message shorter or longer than the receive posted for it is an error
//     that names the peer, on at least one side, and nobody hangs.
// A new transport is tested by registering it. Launch with mpirun, 2+ ranks;
// GDR_CONTRACT_TRANSPORTS=a,b limits the list. One line per check; exit 1
// when any rank saw a failure.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/memory/memory.h"
#include "src/memory/payload_pattern.h"
#include "transports/staged/staged_transport.h"
#include "transports/transport.h"

namespace gdr {
namespace {

int g_failures = 0;

void expect(Bootstrap& boot, bool ok, const std::string& what) {
  if (!ok) ++g_failures;
  fmt::print("{} rank {}: {}\n", ok ? "ok  " : "FAIL", boot.rank(), what);
  std::fflush(stdout);
}

// Message `msg` from rank `from` carries the p2p payload (src/memory/payload_pattern.h).
std::uint64_t seed_of(int from, int msg) { return pattern::seed(from, static_cast<std::uint64_t>(msg), 0); }
MemoryOps& host() { return *memory_ops(MemKind::host); }

struct Lane {
  std::string label;  // "ucx direct"
  std::string name;
  Path path;
};

std::unique_ptr<Transport> open(const Lane& lane, Bootstrap& boot, const std::vector<int>& peers) {
  // The environment's settings (GDR_VERBS_MODE: the softroce label runs each mode).
  auto t = find_transport(lane.name)->create(boot, resolve_settings({}, std::getenv));
  if (lane.path == Path::staged) {
    StagingConfig cfg;
    cfg.chunk_bytes = 4096;  // small chunks: every message of the train is cut
    cfg.slots = 2;
    t = make_staged_transport(std::move(t), boot, *memory_ops(MemKind::host), cfg);
  }
  t->connect(peers);
  return t;
}

std::vector<int> others(const Bootstrap& boot) {
  std::vector<int> v;
  for (int r = 0; r < boot.size(); ++r)
    if (r != boot.rank()) v.push_back(r);
  return v;
}

// A host buffer registered with the transport (collective: same order everywhere).
struct Registered {
  Buffer buf;
  std::unique_ptr<MemRegion> region;
  Registered(Transport& t, std::size_t bytes) : buf(memory_ops(MemKind::host)->alloc(bytes)) {
    std::memset(buf.ptr, 0, bytes);
    region = t.register_memory(buf);
  }
  ~Registered() {
    region.reset();
    memory_ops(MemKind::host)->free(buf);
  }
  std::byte* at(std::size_t off) const { return static_cast<std::byte*>(buf.ptr) + off; }
};

// Every rank sends every other rank the same train at once: lengths that
// are zero, odd and repeated (so only posting order tells two apart), all
// posted before any wait.
void train(const Lane& lane, Bootstrap& boot) {
  const std::vector<std::size_t> lens = {0, 1, 3, 1000, 1000, 1000, 0, 4095, 4097, 65537, 7, 1000,
                                         1000, 1 << 20, 13, 0, 12289, 1000, 1000, 1000};
  std::vector<std::size_t> offs;
  std::size_t total = 0;
  for (auto l : lens) { offs.push_back(total); total += l; }
  auto peers = others(boot);
  auto t = open(lane, boot, peers);
  Registered tx(*t, total), rx(*t, total * peers.size());
  for (std::size_t m = 0; m < lens.size(); ++m) host().fill_pattern(tx.at(offs[m]), lens[m], seed_of(boot.rank(), int(m)));
  std::vector<Request> reqs;
  for (std::size_t p = 0; p < peers.size(); ++p)
    for (std::size_t m = 0; m < lens.size(); ++m)
      reqs.push_back(t->post_recv(peers[p], *rx.region, p * total + offs[m], lens[m]));
  boot.barrier();
  for (int peer : peers)
    for (std::size_t m = 0; m < lens.size(); ++m) reqs.push_back(t->post_send(peer, *tx.region, offs[m], lens[m]));
  std::string err;
  try { wait_all(*t, reqs, boot); } catch (const std::exception& e) { err = e.what(); }
  expect(boot, err.empty(), fmt::format("{}: {} messages per peer in flight completed{}", lane.label,
                                        lens.size(), err.empty() ? "" : ": " + err));
  std::size_t wrong = 0;
  for (std::size_t p = 0; p < peers.size() && err.empty(); ++p)
    for (std::size_t m = 0; m < lens.size(); ++m)
      wrong += host().count_wrong_pattern(rx.at(p * total + offs[m]), lens[m], seed_of(peers[p], int(m)));
  expect(boot, err.empty() && wrong == 0,
         fmt::format("{}: every byte in posting order (lengths 0..1 MiB, odd, repeated): {} wrong", lane.label, wrong));
  boot.barrier();
}

// Rank 1 waits for a message rank 0 sends only after rank 1's wait timed
// out: the timeout must name rank 0, and the request must still complete.
void timeout_names_peer(const Lane& lane, Bootstrap& boot) {
  std::vector<int> peers;
  if (boot.rank() <= 1) peers = {1 - boot.rank()};
  auto t = open(lane, boot, peers);
  Registered buf(*t, 64);
  std::string err;
  double saved = boot.timeout();
  if (boot.rank() == 1) {
    Request r = t->post_recv(0, *buf.region, 0, 64);
    boot.set_timeout(1.0);
    try { wait_one(*t, r, boot); } catch (const TimeoutError& e) { err = e.what(); }
    boot.set_timeout(saved);
    expect(boot, err.find("from " + boot.who(0)) != std::string::npos,
           fmt::format("{}: a timed-out receive names its peer: {}", lane.label, err.empty() ? "no timeout" : err));
    boot.barrier();
    std::string late;
    try { wait_one(*t, r, boot); } catch (const std::exception& e) { late = e.what(); }
    expect(boot, late.empty() && host().count_wrong_pattern(buf.at(0), 64, seed_of(0, 9)) == 0,
           fmt::format("{}: the receive completes once the peer sends{}", lane.label, late.empty() ? "" : ": " + late));
  } else {
    boot.barrier();  // answers rank 1's roll call while it times out
    if (boot.rank() == 0) {
      host().fill_pattern(buf.at(0), 64, seed_of(0, 9));
      wait_one(*t, t->post_send(1, *buf.region, 0, 64), boot);
    }
  }
  boot.barrier();
}

// Rank 0 sends `sent` B, rank 1 receives `posted` B. One side must raise an
// error naming the other within a few seconds. The transport is left
// unreleased afterwards: its state after a failed operation is undefined.
void mismatch(const Lane& lane, Bootstrap& boot, std::size_t sent, std::size_t posted) {
  std::vector<int> peers;
  if (boot.rank() <= 1) peers = {1 - boot.rank()};
  auto t = open(lane, boot, peers);
  // Never freed: a broken transport may still write into it (idle progress).
  auto& buf = *new Registered(*t, 1 << 16);
  int named = 0;
  std::string err;
  if (boot.rank() <= 1) {
    Request r = boot.rank() == 0 ? t->post_send(1, *buf.region, 0, sent) : t->post_recv(0, *buf.region, 0, posted);
    double saved = boot.timeout();
    boot.set_timeout(3.0);
    try { wait_one(*t, r, boot); } catch (const TimeoutError& e) {
      err = e.what();
    } catch (const std::exception& e) {
      err = e.what();
      named = err.find(boot.who(1 - boot.rank())) != std::string::npos;
    }
    boot.set_timeout(saved);
  }
  int any = boot.allreduce_max(named);
  expect(boot, any == 1 || boot.rank() > 1,
         fmt::format("{}: a {} B send into a {} B receive is an error naming the peer{}", lane.label, sent,
                     posted, err.empty() ? "; this rank: no error" : "; this rank: " + err));
  (void)buf.region.release();
  (void)t.release();  // left unreleased: tearing down a failed endpoint may abort
  boot.barrier();
}

std::vector<Lane> lanes(const Bootstrap& boot) {
  const char* only = std::getenv("GDR_CONTRACT_TRANSPORTS");
  std::string want = only ? fmt::format(",{},", only) : "";
  std::vector<Lane> v;
  for (const auto& info : transport_registry()) {
    if (!want.empty() && want.find("," + info.name + ",") == std::string::npos) continue;
    if (std::string why = info.unavailable_reason(); !why.empty()) {
      if (boot.rank() == 0) fmt::print("skip {}: {}\n", info.name, why);
      continue;
    }
    v.push_back({info.name + " direct", info.name, Path::direct});
    v.push_back({info.name + " staged", info.name, Path::staged});
  }
  return v;
}

}  // namespace
}  // namespace gdr

int main(int argc, char** argv) {
  using namespace gdr;
  Bootstrap boot(&argc, &argv, 60.0);
  if (boot.size() < 2) {
    fmt::print(stderr, "contract_test: needs at least 2 ranks\n");
    return 2;
  }
  auto all = lanes(boot);
  if (boot.rank() == 0) fmt::print("contract: {} lanes at {} ranks\n", all.size(), boot.size());
  for (const auto& lane : all) {
    train(lane, boot);
    timeout_names_peer(lane, boot);
    mismatch(lane, boot, 100, 200);
    mismatch(lane, boot, 300, 200);
  }
  int failed = boot.allreduce_max(g_failures > 0 ? 1 : 0);
  if (boot.rank() == 0) fmt::print("contract: {}\n", failed ? "FAILED" : "all lanes kept the contract");
  return failed;
}
