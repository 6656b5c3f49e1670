#include "outputs/crash_sealer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include "core/signals.h"
#include "outputs/hdf5_sink.h"
#include "outputs/output_lock.h"

extern char** environ;

namespace gdr {

std::string SealWatch::start(const std::string& path, int lock_fd, int file_fd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return fmt::format("pipe: {}", std::strerror(errno));
  // Above the fds the child is given (3, 4, 5), so that no dup2 clobbers another.
  int rd = fcntl(p[0], F_DUPFD_CLOEXEC, 10), wr = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
  close(p[0]);
  close(p[1]);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string pid = std::to_string(getpid());
  std::string args[] = {"gdrbench", "--seal-watch", path, pid, host};
  char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(), args[4].data(), nullptr};
  char* envp[] = {nullptr};  // nothing of the job's (launchers find ranks by OMPI_* variables)
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, lock_fd, 3);
  posix_spawn_file_actions_adddup2(&fa, rd, 4);
  posix_spawn_file_actions_adddup2(&fa, file_fd >= 0 ? file_fd : lock_fd, 5);
  for (int fd : {0, 1, 2}) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none, dflt;
  sigemptyset(&none);
  sigemptyset(&dflt);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&dflt, s);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &dflt);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t child = 0;
  int rc = posix_spawn(&child, "/proc/self/exe", &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(rd);
  if (rc != 0) {
    close(wr);
    return fmt::format("posix_spawn: {}", std::strerror(rc));
  }
  fd_ = wr;
  set_signal_notify_fd(wr);  // each signal reaches it even if rank 0 dies next
  return {};
}

void SealWatch::closed() {
  if (fd_ < 0) return;
  set_signal_notify_fd(-1);
  [[maybe_unused]] ssize_t n = write(fd_, "closed\n", 7);
  close(fd_);
  fd_ = -1;
}

int seal_watch_main(int argc, char** argv) {
  if (argc < 5) return 2;
  // Every other fd rank 0 had open without O_CLOEXEC (HDF5's own, which
  // holds HDF5's lock on the file; MPI's sockets) goes: else the watcher
  // itself would keep the file locked against its own sealing.
  close_range(6, ~0U, 0);  // 5: the file itself, its lock by identity
  for (int s : {SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_IGN);  // it must outlive the job's stop
  std::string got;
  char buf[512];
  for (;;) {
    ssize_t n = read(4, buf, sizeof buf);
    if (n > 0) {
      got.append(buf, static_cast<std::size_t>(n));
      if (got.size() > 65536) got.erase(0, got.size() - 4096);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  const std::string path = argv[2];
  if (got.find("closed\n") == std::string::npos) {
    int sig = 0;
    if (std::size_t at = got.rfind("signal "); at != std::string::npos) sig = std::atoi(got.c_str() + at + 7);
    std::string why = fmt::format("rank 0 (pid {} on {}) ended before closing the file", argv[3], argv[4]);
    if (sig)
      why += fmt::format(", after signal {} ({}): a second Ctrl-C, or a launcher that gave up waiting, "
                         "ends the ranks at once", sig, strsignal(sig));
    else
      why += ": killed (SIGKILL), or ended by its MPI library when the launcher went away";
    seal_abandoned_file(path, sig ? "interrupted" : "failed", why + "; closed by its watcher, the cases "
                        "completed before are kept");
    // The lock file, if still ours (held through fd 3: nobody took the name).
    struct stat a {}, b {};
    const std::string lp = lock_path_for(path);
    if (fstat(3, &a) == 0 && stat(lp.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      unlink(lp.c_str());
  }
  return 0;
}

}  // namespace gdr
