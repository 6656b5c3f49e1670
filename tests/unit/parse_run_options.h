// `gdrbench run`'s options from a command line, as main() parses and validates them (no MPI).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "options/options.h"

namespace gdr::test {

inline RunOptions parse_run_options(std::vector<std::string> argv) {
  CLI::App app;
  RunArgs args;
  add_run_options(app, args);
  std::reverse(argv.begin(), argv.end());  // CLI11 takes the arguments last first
  app.parse(argv);
  return validate(args);
}

}  // namespace gdr::test
