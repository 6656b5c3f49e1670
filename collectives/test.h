// What a test is: a small set of hooks the sweep runner calls (the shape of
// nccl-tests' testEngine), written only against the transport interface and
// the memory-kind table. A new test is one file plus GDR_REGISTER_TEST (and
// its line in collectives/CMakeLists.txt): docs/developers/tests.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/check_mode.h"
#include "src/core/datatype.h"
#include "src/memory/memory.h"
#include "transports/transport.h"
#include "layout.h"

namespace gdr {

class Bootstrap;

// What a test's rows are, which every reader of them needs (the runner, the
// sinks, the verdict, the file's attributes that the analysis reads): the one
// identity of a test, so that nothing outside this registry matches on names.
//  collective: every rank takes part; time per operation.
//  latency:    a round trip between two ranks; time one way.
//  bandwidth:  messages streamed between two ranks; time per message.
enum class TestKind { collective, latency, bandwidth };
std::string_view test_kind_name(TestKind k);  // "collective", "latency", "bandwidth": the file's test_kind

struct TestTraits {
  TestKind kind = TestKind::collective;
  int directions = 1;       // point-to-point: 2 when both ends send at once (bibw); bytes moved = directions x bytes
  bool checks_data = true;  // whether its rows can verify what arrived (p2p reference rows cannot)
  // What --window counts in this test, and what --chunk sizes; empty: it has
  // none (the file then leaves `window`, `chunk_bytes` out).
  std::string_view window = {};
  std::string_view chunk = {};
  bool point_to_point() const { return kind != TestKind::collective; }
};

// One case of the sweep: everything that identifies a row of results.
struct CaseParams {
  std::string test;
  TestTraits traits;  // the test's (a reference row: with the row's own checks_data, no chunk)
  std::string transport;
  bool reference = false;  // a library's own collective (MPI_Allreduce, NCCL)
  MemKind mem = MemKind::host;
  Path path = Path::direct;
  DType dtype = DType::f32;
  Op op = Op::sum;
  bool has_dtype = true;  // false for p2p tests: they move bytes
  std::size_t bytes = 0;
  std::size_t count = 0;  // elements (bytes for p2p tests)
  int iters = 20;           // timed iterations; under iters_auto the most, cut to case_time
  int warmup = 5;
  bool iters_auto = false;  // --iters auto: the loops run as many as fit case_time
  double case_time = 1.0;   // seconds of timed work per case under iters_auto
  CheckMode check = CheckMode::after;
  int src = -1, dst = -1;  // p2p pair; -1 for collectives
  int window = 64;         // messages in flight per bw/bibw iteration
  int slots = 0;           // p2p: distinct buffers per side (0: auto; set by the test's complete hook)
  std::size_t chunk_bytes = 0;  // ring pipelining granularity; 0 = auto
  // p2p over a concurrent pattern (collectives/patterns.h): its name, the
  // step, and the step's flows (sender, receiver), all running at once.
  // Empty pattern: one pair at a time (src, dst).
  std::string pattern;
  int step = -1;
  std::vector<std::pair<int, int>> flows;
  // A retest step of the adaptive second phase (src/planning/retest.h): its round
  // (1..), and what it probes and why, as JSON (0 and empty: not a retest).
  int retest_round = 0;
  std::string retest;
};

// What one rank measured in one case.
struct CaseOutcome {
  // Seconds per timed iteration; NaN if this rank sat out. Every rank returns
  // as many as the others (the count is agreed under --iters auto).
  std::vector<double> times;
  std::uint64_t wrong = 0;    // wrong elements summed over checked iterations
  std::uint64_t checked = 0;  // iterations (windows, round trips) whose data this rank verified
};

// What a test's prepare() allocates: each buffer in the case's memory kind
// (in order: the sweep's cache hands kept buffers on by size), and (pinned)
// host memory besides.
struct Footprint {
  std::vector<std::size_t> buffers;
  std::size_t host = 0;
};

// What a test runs on. `transport` is null for reference rows.
struct TestEnv {
  Bootstrap& boot;
  Transport* transport;
  MemoryOps& mem;
  const Settings& settings;  // the run's; the tests read CollectiveSettings
};

// The tests' own settings (declared in registry.cpp): environment only.
struct CollectiveSettings {
  // GDR_SELFTEST_CORRUPT=1: spoil one element per case (timed_loop.h).
  bool selftest_corrupt = false;
  // GDR_WAIT_YIELD: concurrent patterns' waits yield (1) or spin (0); unset:
  // yield when this node has more ranks than cores (p2p_concurrent.cpp).
  std::optional<int> wait_yield;
  // GDR_SELFTEST_SLOW_RANK=R, GDR_SELFTEST_SLOW_US=N: rank R sleeps N us at the
  // start of every timed window of a concurrent pattern (bw, bibw), sending or
  // receiving: a slow end on demand for the retests' test (tests/mpi), where a
  // CPU quota on one host also slowed the other flows of its steps.
  std::optional<int> selftest_slow_rank;
  int selftest_slow_us = 0;
};

class Test {
 public:
  virtual ~Test() = default;
  // Allocates and registers buffers for messages up to max_bytes. Collective:
  // every rank calls it in the same order. Never timed.
  virtual void prepare(TestEnv& env, std::size_t max_bytes) = 0;
  virtual CaseOutcome run(TestEnv& env, const CaseParams& c) = 0;
};

// The lane a footprint is asked for: `test`'s messages up to max_bytes, rank
// `rank` of `ranks`, one pair at a time (pattern empty) or a concurrent pattern.
struct FootprintArgs {
  TestTraits traits;
  std::size_t max_bytes = 0;
  int ranks = 1, rank = 0;
  std::string_view pattern = {};
  patterns::Layout layout = {};  // a concurrent pattern's ranks, host map and rounds
};

// Iterations --iters/--warmup auto gives a case of one size (OSU's counts).
struct IterCounts {
  int iters = 20, warmup = 5;
};

struct TestInfo {
  std::string name;
  TestTraits traits;
  std::function<std::unique_ptr<Test>()> create;
  // Bytes moved per timed unit, for algbw = bytes / time (unset: directions x bytes).
  std::function<double(const CaseParams&)> algbw_bytes = {};
  std::function<double(int ranks)> busbw_factor = {};  // unset: 1
  // What prepare() allocates on one rank for a lane's messages up to
  // max_bytes, for the out-of-memory check before the sweep (empty: send,
  // receive and a 64 B ack).
  std::function<Footprint(const FootprintArgs&)> footprint = {};
  // --iters auto: the most iterations and the warm-up at this size (unset: 20 and 5).
  std::function<IterCounts(std::size_t bytes)> auto_iters = {};
  // Fills in the case's own parameters from the user's (p2p: its slots; the
  // ring: the chunk it will use) for a sweep up to max_bytes at `ranks` ranks.
  std::function<void(CaseParams&, std::size_t max_bytes, int ranks)> complete = {};
  // Its variant over a concurrent pattern (--pattern, collectives/patterns.h);
  // unset: the test runs one pair at a time only.
  std::function<std::unique_ptr<Test>(std::string_view pattern, const patterns::Layout& at)> create_on_pattern = {};

  double bytes_moved(const CaseParams& c) const {
    return algbw_bytes ? algbw_bytes(c) : traits.directions * static_cast<double>(c.bytes);
  }
  double bus_factor(int ranks) const { return busbw_factor ? busbw_factor(ranks) : 1.0; }
};

std::vector<TestInfo>& test_registry();
const TestInfo* find_test(std::string_view name);
// The registered tests whose traits pass `pred`, as prose ("latency, bw and bibw"), for notes.
std::string test_names_where(bool (*pred)(const TestTraits&));
struct TestRegistrar {
  explicit TestRegistrar(TestInfo info);
};
// GDR_REGISTER_TEST(reg_bw, {.name = "bw", .traits = {...}, .create = ...}):
// designated initializers, so that a new hook never shifts the others.
#define GDR_REGISTER_TEST(var, ...) \
  static ::gdr::TestRegistrar var { ::gdr::TestInfo __VA_ARGS__ }

// A library's own collective, run as a reference row beside ours.
struct ReferenceInfo {
  std::string name;        // "mpi", "nccl"; one name may stand beside several tests
  std::string test;        // which of our tests it stands beside ("allreduce")
  // Empty when it can run this case, else why not (shown once as a note).
  std::function<std::string(const CaseParams&)> cannot_run;
  std::function<std::unique_ptr<Test>()> create;
  std::function<Footprint(std::size_t max_bytes, int ranks)> footprint = {};  // as TestInfo's
  // What the row is a ceiling of, for the note the table and file carry (empty: none).
  std::string bounds = {};
};
std::vector<ReferenceInfo>& reference_registry();
// The row `name` registered beside `test`, or null.
const ReferenceInfo* find_reference(std::string_view name, std::string_view test);
// The tests `name` stands beside, comma-separated ("" if unknown).
std::string reference_tests(std::string_view name);
struct ReferenceRegistrar {
  explicit ReferenceRegistrar(ReferenceInfo info);
};
#define GDR_REGISTER_REFERENCE(var, ...) \
  static ::gdr::ReferenceRegistrar var { ::gdr::ReferenceInfo{__VA_ARGS__} }

// Shared by the timed loops: seconds of the run's timer (src/core/timer.h).
double now_seconds();

}  // namespace gdr
