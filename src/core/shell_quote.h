// Text for a shell: a name with any bytes (spaces, quotes, newlines, bytes
// that are not UTF-8) prints and stores so that it pastes back into bash and
// names the same file (the command line, the `# results:` line, errors).
#pragma once

#include <string>
#include <string_view>

namespace gdr {

// `s` as is when it holds only [A-Za-z0-9_@%+=:,./-]; in '...' when it only
// adds other printable text; else in bash's $'...' with \n, \t, \', \\ and
// \xHH for control bytes and bytes that are not UTF-8.
std::string shell_quote(std::string_view s);

}  // namespace gdr
