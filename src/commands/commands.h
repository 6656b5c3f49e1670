// The subcommands' entry points, called by main() after CLI11 has parsed.
#pragma once

#include <CLI/CLI.hpp>

#include "options/options.h"

namespace gdr {

int run_command(const RunArgs& args, int argc, char** argv);
int list_command();
// The rank this process will have, read from the launcher's environment
// before MPI starts, so that only one rank prints a usage error.
int launcher_rank();
// Prints "gdrbench: <message>" on rank 0 only.
void usage_error_line(const std::string& message);

}  // namespace gdr
