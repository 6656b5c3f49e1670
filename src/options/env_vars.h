// Every environment variable gdrbench reads, checked up front as strictly as
// a command-line option: a bad value is one line and exit status 2, never an
// uncaught exception or a silently ignored typo of a number. The table is
// generated from the components' declarations (src/core/component_options.h):
// each variable is declared once, beside its flag twin, with one parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gdr {

struct EnvVar {
  std::string name;
  std::string want;  // what it steers, for the docs and the error line
  std::string flag;  // its flag twin ("--stage-chunk"), empty when none
};

// The table, in the help's component order (memory kinds, transports, paths,
// the program, the analysis commands), each component's in declaration order.
std::vector<EnvVar> env_vars();

// "" when `value` is good for the variable `name` (unknown names are fine:
// gdrbench does not read them), else the one line to print.
std::string env_value_problem(std::string_view name, std::string_view value);

// Checks every variable of the table that is set and not empty (empty is
// unset, for every one of them); "" when all are good, else the first
// problem in one line.
std::string environment_problem();

}  // namespace gdr
