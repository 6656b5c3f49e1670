// SIGINT/SIGTERM turn into a flag that every wait loop checks, so an
// interrupted run closes its result file cleanly and marks it.
#pragma once

namespace gdr {

void install_signal_handlers();
// Each signal is also written to `fd` as "signal NN\n" (the result file's
// watcher, src/outputs/crash_sealer.h); -1 stops that.
void set_signal_notify_fd(int fd);
bool interrupted();
// The signal came from the parent process (mpirun stopping the job).
bool interrupted_by_launcher();
int interrupt_signal();
// Throws InterruptedError when a signal arrived, and whatever the poll set
// below throws (rank 0: another rank reported its failure). Every wait loop
// calls it, so no wait outlives the reason to stop.
void throw_if_interrupted();
void set_failure_poll(void (*poll)());

}  // namespace gdr
