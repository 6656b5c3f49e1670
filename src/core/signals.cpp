#include "signals.h"

#include <fmt/format.h>

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <string>

#include "errors.h"

namespace gdr {
namespace {
volatile std::sig_atomic_t g_signal = 0;
volatile pid_t g_sender = 0;
volatile std::sig_atomic_t g_notify_fd = -1;
extern "C" void on_signal(int sig, siginfo_t* info, void*) {
  if (!g_signal && info) g_sender = info->si_pid;
  g_signal = sig;
  if (const int fd = g_notify_fd; fd >= 0) {  // "signal NN\n", async-signal-safe
    char line[] = "signal 00\n";
    line[7] = static_cast<char>('0' + sig / 10 % 10);
    line[8] = static_cast<char>('0' + sig % 10);
    [[maybe_unused]] ssize_t n = write(fd, line, sizeof line - 1);
  }
}

// "interrupted by signal 15 from the launcher (pid 123)": mpirun sends
// SIGTERM to every rank when one of them died or when it was itself
// interrupted, so say where the signal came from.
std::string interrupt_text() {
  std::string s = fmt::format("interrupted by signal {} ({})", int(g_signal), strsignal(g_signal));
  if (g_sender > 0 && g_sender == getppid())
    s += fmt::format(" from the launcher (pid {}): it stops every rank when one died or when it "
                     "was interrupted itself", int(g_sender));
  else if (g_sender > 0)
    s += fmt::format(" from pid {}", int(g_sender));
  return s;
}
}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A --json pipe or FIFO whose reader went away: a failed write (EPIPE) the
  // sink reports and the file records, not a silent death of rank 0.
  signal(SIGPIPE, SIG_IGN);
}

void set_signal_notify_fd(int fd) { g_notify_fd = fd; }

bool interrupted() { return g_signal != 0; }
bool interrupted_by_launcher() { return g_signal && g_sender > 0 && g_sender == getppid(); }
int interrupt_signal() { return g_signal; }

namespace {
void (*g_failure_poll)() = nullptr;
}  // namespace

void set_failure_poll(void (*poll)()) { g_failure_poll = poll; }

void throw_if_interrupted() {
  if (g_signal) throw InterruptedError(interrupt_text());
  if (g_failure_poll) g_failure_poll();
}

}  // namespace gdr
