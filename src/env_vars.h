// Every environment variable gdrbench reads, checked up front as strictly as
// a command-line option: a bad value is one line and exit status 2, never an
// uncaught exception or a silently ignored typo of a number.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace gdr {

struct EnvVar {
  const char* name;
  const char* want;  // what a good value looks like, for the error line
  // "" when `value` is good, else why not (without the name).
  std::string (*check)(std::string_view value);
};

// The table (README.md "Environment" lists the same names).
std::span<const EnvVar> env_vars();

// "" when `value` is good for the variable `name` (unknown names are fine:
// gdrbench does not read them), else the one line to print.
std::string env_value_problem(std::string_view name, std::string_view value);

// Checks every variable of the table that is set and not empty (empty is
// unset, for every one of them); "" when all are good, else the first
// problem in one line.
std::string environment_problem();

// A whole number in [lo, hi] without sign tricks, spaces or suffixes.
bool parse_whole(std::string_view text, long long lo, long long hi, long long& out);

}  // namespace gdr
