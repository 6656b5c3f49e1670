// Run metadata gathered at start-up: time, command line, environment.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace gdr {

// "2026-11-29T14:35:19Z"; `compact` gives "20261129T143519" for file names.
std::string utc_now(bool compact = false);

// The command line as a shell reads it back, through the one redaction
// (src/outputs/redaction.h): a secret in a word, or in a flag and its value.
std::string join_command_line(int argc, char** argv);

// Bounds on what the file keeps of the environment (HDF5 attributes, and a
// value of any size must never cost more than this).
inline constexpr std::size_t kMaxEnvValue = 2048, kMaxEnvName = 256, kMaxEnvVars = 512;

// The environment that explains a measurement, by allowlist: the variables
// of the libraries in the path (MPI, PMIx, UCX, NCCL, CUDA, rdma-core, HDF5),
// Slurm's placement and gdrbench's own; minus any whose name or value looks
// like a secret (src/outputs/redaction.h, the second line of defence); values cut to
// kMaxEnvValue bytes, at most kMaxEnvVars of them. `left_out` counts the
// rest by reason ("412 outside the allowlist, 1 named like a secret").
struct EnvCapture {
  std::vector<std::pair<std::string, std::string>> vars;
  std::string left_out;
};
EnvCapture capture_environment(char** envp);
std::vector<std::pair<std::string, std::string>> captured_environment(char** envp);

}  // namespace gdr
