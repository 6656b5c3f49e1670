// A finished case and the places it goes (table, JSON Lines, HDF5).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/test.h"
#include "stats.h"

namespace gdr {

struct CaseRecord {
  CaseParams params;
  int ranks = 0;
  std::vector<double> times;  // seconds, ranks x iters row-major; NaN where a rank sat out
  std::uint64_t wrong = 0;    // summed over ranks and iterations
  Summary slowest;            // over iterations of the slowest rank's time, seconds
  double algbw_gbps = 0, busbw_gbps = 0;
  std::string transport_mode;  // Transport::mode() of the row (verbs: imm|write|poll); empty: none
};

// Fills slowest, algbw and busbw from times and the test's factors.
void summarize_record(CaseRecord& r, double algbw_bytes, double busbw_factor);

// Whether a case's `window` / `chunk_bytes` says anything about how it ran;
// the HDF5 file leaves them out where not (a placeholder misleads).
// window: bw and bibw rows, with their reference rows (NCCL, copy-*).
bool uses_window(const CaseParams& c);
// chunk_bytes: our ring allreduce (not the library's own collectives).
bool uses_chunk(const CaseParams& c);

struct RunMetadata {
  std::string command_line, version, git_commit, start_utc, end_utc;
  std::string status = "running";  // running | complete | failed | interrupted
  std::string error;
  int ranks = 0;
  std::vector<std::string> hosts;
  std::vector<int> local_ranks;
  std::vector<std::pair<std::string, std::string>> facts;  // "mpi.library" -> "..."
  std::vector<std::pair<std::string, std::string>> environment;
};

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void begin(const RunMetadata&) {}
  virtual void add(const CaseRecord& r) = 0;
  virtual void note(const std::string&) {}
  virtual void end(const RunMetadata&) {}
};

std::unique_ptr<ResultSink> make_table_sink();          // stdout
std::unique_ptr<ResultSink> make_jsonl_sink(const std::string& path);

}  // namespace gdr
