// A small file written whole or not at all (doctor -o): a reader never sees half of it, and a
// kill or a full disk mid-write leaves the old file as it was.
#pragma once

#include <string>

namespace gdr {

// Writes `text` to `path` (given as `option`) through a temporary file beside the file the path
// names (its symbolic links followed: the link stays a link), flushed to disk, then renamed over
// it. "" when written, else the problem in one line.
std::string write_whole(const std::string& path, const std::string& text, const char* option);

// CLI11's check of an option that names a file: an empty name is refused (exit 2), never read as
// "not given" (run --output '' would otherwise write the default name).
std::string file_name_check(const std::string& name);

}  // namespace gdr
