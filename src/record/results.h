// A finished case and the places it goes (table, JSON Lines, HDF5).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/test.h"
#include "core/stats.h"

namespace gdr {

struct CaseRecord {
  CaseParams params;
  int ranks = 0;
  std::vector<double> times;  // seconds, ranks x iters row-major; NaN where a rank sat out
  std::uint64_t wrong = 0;    // summed over ranks and iterations
  std::uint64_t checked_iters = 0;  // iterations verified, the most of any rank
  Summary slowest;            // over iterations of the slowest rank's time, seconds
  double algbw_gbps = 0, busbw_gbps = 0;
  // The path record (src/verdicts/path_record.h): what moved the bytes, and how close the
  // row came to the limit of that path.
  std::string path_taken;   // "" when the transport cannot tell
  bool via_host = false;    // a device-memory row whose bytes went through host memory
  std::string via_host_cause;
  std::string path_unknown;  // non-empty: the path is not established, and why (no GPUDirect claim)
  double peak_gbps = 0;     // 0: no limit known (then peak_why says why; with one, why under 50 %)
  double pct_peak = 0;      // busbw / peak x 100 (bibw: against 2 x peak)
  std::string peak_source, peak_why;
  std::string transport_mode;  // Transport::mode() of the row (verbs: imm|write|poll); empty: none
};

// Median of one rank's finite times (a row of `times`), seconds; NaN when it has none.
double rank_median(const CaseRecord& r, int rank);

// Fills slowest, algbw and busbw from times and the test's factors.
void summarize_record(CaseRecord& r, double algbw_bytes, double busbw_factor);

// Whether a case's `window` / `chunk_bytes` says anything about how it ran
// (TestTraits::window, chunk); the HDF5 file leaves them out where not (a
// placeholder misleads). window: with the test's reference rows (NCCL, copy-*).
bool uses_window(const CaseParams& c);
// chunk_bytes: our rows only (not the library's own collectives).
bool uses_chunk(const CaseParams& c);

struct RunMetadata {
  std::string command_line, version, git_commit, start_utc, end_utc;
  std::string status = "running";  // running | complete | failed | interrupted
  std::string error;
  int ranks = 0;
  std::vector<std::string> hosts;
  std::vector<int> local_ranks;
  // Per rank, what it used (/ranks/gpu, /ranks/hca): "0000:3B:00.0 NVIDIA H200",
  // "mlx5_0:1"; several joined by ',' (lanes differ), "" for none. Filled as
  // transports connect (Sweep::note_rank_devices).
  std::vector<std::string> rank_gpus, rank_hcas;
  std::vector<std::pair<std::string, std::string>> facts;  // "mpi.library" -> "..."
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<std::string> verdict;  // src/verdicts/verdict.h: the lines a person reads first
};

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void begin(const RunMetadata&) {}
  virtual void add(const CaseRecord& r) = 0;
  virtual void note(const std::string&) {}
  // New facts (a transport connected): on disk before the next case, so an
  // interrupted run keeps them.
  virtual void update(const RunMetadata&) {}
  // A record that is not a case, one JSON object (a live verdict, src/verdicts/live_verdicts.h): JSON Lines only.
  virtual void event(const std::string&) {}
  // Writes the closing metadata and closes; throws RunError when a write or
  // the close failed (a full disk), so that no failure passes as success.
  virtual void end(const RunMetadata&) {}
};

std::unique_ptr<ResultSink> make_table_sink();          // stdout
// Writes wait at most `timeout` seconds for a slow reader (a pipe, a FIFO).
std::unique_ptr<ResultSink> make_jsonl_sink(const std::string& path, bool force, double timeout);

}  // namespace gdr
