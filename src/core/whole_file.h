// A small file written whole or not at all (doctor -o): a reader never sees half of it, and a
// kill or a full disk mid-write leaves the old file as it was.
#pragma once

#include <string>

namespace gdr {

// Writes `text` to `path` (given as `option`) through a temporary file beside the file the path
// names (its symbolic links followed: the link stays a link), flushed to disk, then renamed over
// it. "" when written, else the problem in one line.
std::string write_whole(const std::string& path, const std::string& text, const char* option);

}  // namespace gdr
