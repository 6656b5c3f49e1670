// A run's hold on its output names: `<path>.lock` beside each file, locked
// with flock (exclusive, never waiting) for the run's whole life. A second
// run given the same name refuses in one line and touches nothing, --force
// included; the kernel drops the lock when the holder dies, so a run that
// was killed never blocks the next one (its stale .lock file is reused).
//
// The lock file also holds a reserve of disk space (posix_fallocate): when
// the disk fills mid-run, releasing it lets the run still write its closing
// status and error instead of leaving the file `running`.
#pragma once

#include <cstddef>
#include <string>

namespace gdr {

class OutputLock {
 public:
  OutputLock() = default;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

  // Takes `<path>.lock` for `option` (--output, --json); reserves `reserve`
  // bytes in it (best effort). "" when held, else the one line to print.
  std::string acquire(const std::string& path, const char* option, std::size_t reserve);
  // Frees the reserved space (the disk filled); the lock stays held.
  void release_reserve();
  int fd() const { return fd_; }
  // Removes the lock file and lets go (also done by the destructor).
  void release();

 private:
  std::string lock_path_;
  int fd_ = -1;
};

// `<path>.lock`: what acquire() creates.
std::string lock_path_for(const std::string& path);

}  // namespace gdr
