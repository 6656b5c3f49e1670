// Run metadata gathered at start-up: time, command line, environment.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gdr {

// "2026-11-29T14:35:19Z"; `compact` gives "20261129T143519" for file names.
std::string utc_now(bool compact = false);

std::string join_command_line(int argc, char** argv);

// Variables with the prefixes that steer the libraries (UCX_, OMPI_, NCCL_,
// CUDA_, SLURM_, PMIX_, GDR_), minus any whose name or value looks like a
// secret (src/secrets.h).
std::vector<std::pair<std::string, std::string>> captured_environment(char** envp);

}  // namespace gdr
