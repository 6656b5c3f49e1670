// The HDF5 result file (schema in results/README.md). Rank 0 owns it.
#pragma once

#include <memory>
#include <string>

#include "record/results.h"

namespace gdr {

// 2: time_us_p99; window and chunk_bytes only where they apply; busbw 0 at
// one rank (results/README.md lists each version).
inline constexpr int kSchemaVersion = 2;

class OutputLock;

// Creates `path` (refusing to replace an existing file unless `force`).
// Throws UsageError when it exists or cannot be created. `lock` (held by the
// caller for the sink's life) gives back its reserved space when the disk
// fills, so that the closing status still lands.
std::unique_ptr<ResultSink> make_hdf5_sink(const std::string& path, bool force, OutputLock* lock);

// A file whose writer died leaving it `running` (src/outputs/crash_sealer.h): gets
// `status` and `error`, loses a case cut short; any other file is untouched.
void seal_abandoned_file(const std::string& path, const std::string& status, const std::string& error);

}  // namespace gdr
