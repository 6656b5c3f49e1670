#include "outputs/output_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/errors.h"
#include "core/shell_quote.h"
#include "outputs/output_path.h"

namespace gdr {

std::string lock_path_for(const std::string& path) { return write_target(path) + ".lock"; }

namespace {

// The holder's own line ("pid 123 on node1"), or "" when unreadable.
std::string holder_of(int fd) {
  char buf[160] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  s = s.substr(0, s.find('\n'));
  return s.find('\0') == std::string::npos ? s : std::string();
}

// Whether `fd` is still the file at `path` (the last holder may have removed
// it between our open and our lock: then the lock guards nothing).
bool still_at(int fd, const std::string& path) {
  struct stat a {}, b {};
  return fstat(fd, &a) == 0 && stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// An exclusive OFD lock on the whole of `fd` (shared by every name of its file); false when another
// process holds a lock on it. True, without the lock, where the lock cannot be had for another
// reason: the file system takes no such locks, or the one in the way is this process's own (where
// flock is emulated by record locks, on 9p and NFS, HDF5's own lock on the file it just created
// is a record lock of ours). The lock file beside it still guards every name.
bool lock_whole(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_SETLK, &fl) == 0) return true;
  if (errno != EAGAIN && errno != EACCES) return true;
  struct flock q {};
  q.l_type = F_WRLCK;
  q.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_GETLK, &q) != 0) return true;
  return !(q.l_type != F_UNLCK && q.l_pid != getpid());
}

}  // namespace

void OutputLock::lock_name(const std::string& path, const char* option) {
  const std::string lp = lock_path_for(path);
  for (int attempt = 0; attempt < 5; ++attempt) {
    int fd = open(lp.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0)
      throw UsageError(fmt::format("{} {}: cannot create its lock file {} ({})", option, shell_quote(path),
                                   shell_quote(lp), std::strerror(errno)));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      throw UsageError(fmt::format("{} {}: its lock file {} is not a regular file", option, shell_quote(path),
                                   shell_quote(lp)));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      std::string who = holder_of(fd);
      close(fd);
      throw UsageError(fmt::format("{} {}: another run is writing it ({}, holding {}); nothing was touched, "
                                   "--force included: wait for it or choose another name",
                                   option, shell_quote(path), who.empty() ? "a process" : who, shell_quote(lp)));
    }
    if (!still_at(fd, lp)) {  // removed by its last holder as we opened it: take the new one
      close(fd);
      continue;
    }
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string me = fmt::format("pid {} on {}\n", getpid(), host);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()))
      (void)0;  // the holder's line is a courtesy; the flock is the lock
    fd_ = fd;
    lock_path_ = lp;
    return;
  }
  throw UsageError(fmt::format("{} {}: its lock file {} keeps being replaced by another run", option,
                               shell_quote(path), shell_quote(lp)));
}

void OutputLock::lock_file(const std::string& path, const char* option) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // nothing there yet, or a FIFO (--json)
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return;  // the sink's own open says why
  if (!lock_whole(fd)) {
    close(fd);
    throw UsageError(fmt::format("{} {}: another run is writing this file under another name (a link to it); "
                                 "nothing was touched, --force included: wait for it or choose another name",
                                 option, shell_quote(path)));
  }
  file_fd_ = fd;
}

void OutputLock::reserve_space(const std::string& path, const char* option, std::size_t reserve) {
  const off_t at = 64;  // past the holder's line
  if (int rc = posix_fallocate(fd_, at, static_cast<off_t>(reserve)); rc == ENOSPC || rc == EDQUOT)
    throw RunError(fmt::format("{} {}: cannot reserve {} KiB beside it for closing the file ({}); nothing was "
                               "written: free some space or choose another folder",
                               option, shell_quote(path), reserve >> 10, std::strerror(rc)));
}

void OutputLock::acquire(const std::string& path, const char* option, std::size_t reserve) {
  try {
    lock_name(path, option);
    lock_file(path, option);
    if (reserve > 0) reserve_space(path, option, reserve);
  } catch (...) {
    release();
    throw;
  }
}

void OutputLock::hold_created(const std::string& path, const char* option) {
  if (file_fd_ < 0) lock_file(path, option);
}

void OutputLock::release_reserve() {
  if (fd_ >= 0 && ftruncate(fd_, 64) == 0) fsync(fd_);
}

void OutputLock::release() {
  if (file_fd_ >= 0) close(file_fd_);
  file_fd_ = -1;
  if (fd_ < 0) return;
  unlink(lock_path_.c_str());  // while held: a newcomer that opened it sees it gone (still_at)
  close(fd_);
  fd_ = -1;
}

OutputLock::~OutputLock() { release(); }

}  // namespace gdr
