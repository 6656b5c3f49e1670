#include "outputs/output_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/shell_quote.h"

namespace gdr {

std::string lock_path_for(const std::string& path) { return path + ".lock"; }

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

}  // namespace

std::string OutputLock::acquire(const std::string& path, const char* option, std::size_t reserve) {
  const std::string lp = lock_path_for(path);
  for (int attempt = 0; attempt < 5; ++attempt) {
    int fd = open(lp.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0)
      return fmt::format("{} {}: cannot create its lock file {} ({})", option, shell_quote(path),
                         shell_quote(lp), std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return fmt::format("{} {}: its lock file {} is not a regular file", option, shell_quote(path),
                         shell_quote(lp));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      std::string who = holder_of(fd);
      close(fd);
      return fmt::format("{} {}: another run is writing it ({}, holding {}); nothing was touched, "
                         "--force included: wait for it or choose another name",
                         option, shell_quote(path), who.empty() ? "a process" : who, shell_quote(lp));
    }
    if (!still_at(fd, lp)) {  // removed by its last holder as we opened it: take the new one
      close(fd);
      continue;
    }
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string me = fmt::format("pid {} on {}\n", getpid(), host);
    if (ftruncate(fd, 0) == 0 && pwrite(fd, me.data(), me.size(), 0) == static_cast<ssize_t>(me.size()) &&
        reserve > 0)
      posix_fallocate(fd, static_cast<off_t>(me.size()), static_cast<off_t>(reserve));  // best effort
    fd_ = fd;
    lock_path_ = lp;
    return {};
  }
  return fmt::format("{} {}: its lock file {} keeps being replaced by another run", option, shell_quote(path),
                     shell_quote(lp));
}

void OutputLock::release_reserve() {
  if (fd_ >= 0 && ftruncate(fd_, 64) == 0) fsync(fd_);
}

void OutputLock::release() {
  if (fd_ < 0) return;
  unlink(lock_path_.c_str());  // while held: a newcomer that opened it sees it gone (still_at)
  close(fd_);
  fd_ = -1;
}

OutputLock::~OutputLock() { release(); }

}  // namespace gdr
