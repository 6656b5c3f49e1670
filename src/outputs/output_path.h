// What `run` does to the names it is given for its outputs (--output, --json),
// before anything is written (docs/operators/outputs.md says it for users):
// a name holding a control character is refused (no reader of the command
// line or the `# results:` line would read it back the same), an existing
// path must be a regular file (--json also takes a FIFO, a live stream),
// and an existing file is replaced only with --force.
#pragma once

#include <cstdint>
#include <string>

namespace gdr {

// Checks up front, on rank 0, that `path` (given as `option`: --output,
// --json) can be written: "" when fine, else the problem in one line.
std::string check_output_path(const std::string& path, bool force, const char* option);

// Whether two paths name one file (links and "./" included), existing or not.
bool same_file(const std::string& a, const std::string& b);

// The file a path will write: its symbolic links followed (dangling ones
// too: opening one creates its target), its folder made canonical. Every
// name of one file that is not a hard link gives the same answer.
std::string write_target(const std::string& path);

// "" when the file system that will hold `path` has `need` bytes free, else
// the one line to print (the run then exits 3 before writing anything).
std::string free_space_shortfall(const std::string& path, const char* option, std::uint64_t need);

}  // namespace gdr
