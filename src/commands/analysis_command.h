// `gdrbench compare|stragglers|report|history ...`: the result analysis,
// written in Python (results/gdranalysis, documented in results/README.md).
// These subcommands hand every argument, unparsed, to
//   $GDR_PYTHON (default /usr/bin/python3) -m gdranalysis <subcommand> <args...>
// with the package's folder prepended to PYTHONPATH, and the binary exits
// with the interpreter's status (compare: 0 no regression, 1 regression,
// 2 bad input).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace gdr {

// Adds the subcommands compare, stragglers, report and history to `app`.
// Their callbacks run during app.parse(): exit_code is set to -1 here and to
// the interpreter's exit status when one of them ran, so main() returns it
// when it is >= 0. Returns the last subcommand added (`history`); the four
// are in the help group "Analysis (Python)".
CLI::App* add_analysis_commands(CLI::App& app, int& exit_code);

// Runs the analysis for one subcommand with its arguments; returns the exit
// status: the interpreter's (0, 1 regression, 2 bad input, 3 internal error
// or missing Python package), 128 + signal if it was killed, 127 when it
// cannot be started, 3 when the package cannot be found. Exposed for tests.
int run_analysis(const std::string& subcommand, const std::vector<std::string>& args);

// The folder holding gdranalysis/ (empty when not found). Order: `named`
// (GDR_ANALYSIS_DIR) when not empty, and then no other; else folders relative
// to the executable: ../share/gdrbench (installed), share/gdrbench (build tree).
std::string analysis_package_dir(const std::string& named = {});

}  // namespace gdr
