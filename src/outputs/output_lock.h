// A run's hold on its output files, keyed by the file, not by the name it
// was given: every name of one file (a symbolic link, a hard link, "./x")
// shares one lock, so a second run that reaches a running run's file under
// another name refuses in one line and touches nothing, --force included.
//
// Two locks make it. `<target>.lock` beside the file the name resolves to
// (symbolic links followed), locked with flock (exclusive, never waiting):
// this guards a name before its file exists. And an OFD record lock on the
// file itself (its device and inode), taken before anything truncates an
// existing file and as soon as a new one is created: this catches a hard
// link. The kernel drops both when the holder dies, so a run that was
// killed never blocks the next one (its stale .lock file is reused).
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

  // Takes the locks of `path`'s file for `option` (--output, --json) and
  // reserves `reserve` bytes. Throws UsageError when another run holds the
  // file (under any name), RunError when the reserve does not fit the disk.
  void acquire(const std::string& path, const char* option, std::size_t reserve);
  // The sink has just created the file that did not exist at acquire():
  // lock it by identity too.
  void hold_created(const std::string& path, const char* option);
  // Frees the reserved space (the disk filled); the lock stays held.
  void release_reserve();
  int fd() const { return fd_; }
  int file_fd() const { return file_fd_; }
  // Removes the lock file and lets go (also done by the destructor).
  void release();

 private:
  void lock_name(const std::string& path, const char* option);
  void lock_file(const std::string& path, const char* option);
  void reserve_space(const std::string& path, const char* option, std::size_t reserve);
  std::string lock_path_;
  int fd_ = -1, file_fd_ = -1;
};

// `<target>.lock`, beside the file `path` resolves to: what acquire() creates.
std::string lock_path_for(const std::string& path);

}  // namespace gdr
