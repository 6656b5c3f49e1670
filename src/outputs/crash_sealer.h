// The file's last line of defence: rank 0 starts a small watcher process of
// its own, in a new session (neither the terminal's Ctrl-C nor the launcher's
// kill reaches it), that shares the output lock and waits on a pipe. Rank 0
// says "closed" once the file is final. When the pipe ends without it (rank
// 0 killed: a second Ctrl-C makes Open MPI end the ranks at once, SIGKILL,
// a launcher that went away), the watcher marks the file `interrupted` (a
// signal had arrived) or `failed`, says why, removes a case cut short, and
// frees the name. So no fault leaves a file `running` with an empty error.
#pragma once

#include <string>

namespace gdr {

class SealWatch {
 public:
  // Starts the watcher for the HDF5 file `path`; `lock_fd` and `file_fd`
  // (the output lock, by name and by identity) are shared with it. Best effort: "" when started, else why not.
  std::string start(const std::string& path, int lock_fd, int file_fd);
  // The file is final: the watcher exits without touching it.
  void closed();

 private:
  int fd_ = -1;
};

// The watcher's own entry (`gdrbench --seal-watch PATH`, started by start()):
// fd 3 the lock, fd 4 the pipe, fd 5 the file (its lock by identity).
int seal_watch_main(int argc, char** argv);

}  // namespace gdr
