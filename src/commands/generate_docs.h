// `gdrbench generate-docs man|bash-completion`: hidden subcommand that writes
// the man page or the bash completion from the app's own option definitions.
#pragma once

#include <CLI/CLI.hpp>

namespace gdr {

// Call last, once every other subcommand is on `app`: the callback walks them.
void add_generate_docs_command(CLI::App& app, int& exit_code);

}  // namespace gdr
