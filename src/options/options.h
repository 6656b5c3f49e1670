// `gdrbench run` options: parsed by CLI11, validated here into typed values.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "core/check_mode.h"
#include "core/component_options.h"
#include "core/datatype.h"
#include "memory/memory.h"
#include "transports/transport.h"

namespace gdr {

enum class Pairs { fixed, ring, all };

// What the user typed, before validation. A component's own flags (--device,
// --hca, --stage-chunk, ...) are not here: each declares and checks its own
// (src/core/component_options.h); their texts land in component_flags.
struct RunArgs {
  std::string tests = "allreduce,latency,bw";
  std::string transports;  // empty: every transport built in and usable here
  std::string mems = "host";
  std::string paths = "direct,staged";
  std::string minbytes = "8", maxbytes = "64M";
  double stepfactor = 2;
  std::string iters = "auto", warmup = "auto";
  double case_time = 1.0;
  std::string budget;  // --budget DURATION; empty: none
  std::string datatypes = "float", ops = "sum";
  std::string check = "after";
  std::string references;  // empty: not given (mpi, and the copy rows device bw rows' verdicts need)
  std::string output, json;
  bool force = false;
  double timeout = 60;
  std::string pairs;
  std::string pattern = "pair";
  std::string max_rounds = "all";
  int window = 64;
  std::string slots = "auto";
  std::string chunk = "auto";
  FlagTexts component_flags;  // the components' flags given: flag -> text
};

// Validated, typed options.
struct RunOptions {
  std::vector<std::string> tests, transports, references;
  bool transports_defaulted = false;
  // No --reference given: beside mpi, the plan adds the copy rows (copy-d2d, copy-d2h, copy-h2d)
  // at the sizes of device bw/bibw rows, whose %peak and path-by-speed verdict need them
  // (src/planning/plan.cpp). --reference none (or any list) leaves them out.
  bool references_defaulted = false;
  std::vector<MemKind> mems;
  std::vector<Path> paths;
  std::vector<std::size_t> sizes;
  std::string maxbytes_text;  // as typed: the sweep may stop below it
  std::vector<DType> dtypes;
  std::vector<Op> ops;
  int iters = 0, warmup = -1;  // 0 / -1: auto, per test and size (TestInfo::auto_iters)
  double case_time = 1.0;      // under --iters auto: seconds of timed work per case
  double budget_s = 0;         // --budget: the schedule's seconds (src/planning/schedule.h); 0: none
  CheckMode check = CheckMode::after;
  std::string output, json;
  bool force = false;
  double timeout = 60;
  Pairs pairs = Pairs::fixed;
  // p2p traffic patterns in sweep order: "pair" (one pair at a time, --pairs)
  // or a concurrent one (collectives/patterns.h).
  std::vector<std::string> patterns{"pair"};
  int max_rounds = 0;  // --max-rounds: the first N rounds of rounds / host-rounds; 0: all
  int window = 64;  // messages per bw/bibw iteration, as OSU
  int slots = 0;    // p2p: distinct message buffers per side; 0: auto (see collectives/p2p.cpp)
  std::size_t chunk_bytes = 0;  // 0: auto (see collectives/ring_allreduce.cpp)
  // Every component's typed settings, from its flags and their environment twins.
  Settings settings;
};

// Adds the `run` options to `sub`, writing into `args`, then every
// registered component's own.
void add_run_options(CLI::App& sub, RunArgs& args);
// "90", "90s", "2m", "1.5h" -> seconds; UsageError naming `option` otherwise.
double parse_duration(std::string_view text, std::string_view option);

// Throws UsageError naming the first problem (the components' checks too). Needs no MPI.
RunOptions validate(const RunArgs& args);
// Checks that need the rank count (p2p with one rank). Throws UsageError.
void validate_for_ranks(const RunOptions& o, int ranks);

std::vector<std::string> split_list(const std::string& s);

}  // namespace gdr
