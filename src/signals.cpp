#include "signals.h"

#include <fmt/format.h>

#include <csignal>

#include "errors.h"

namespace gdr {
namespace {
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) { g_signal = sig; }
}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_signal != 0; }
int interrupt_signal() { return g_signal; }

namespace {
void (*g_failure_poll)() = nullptr;
}  // namespace

void set_failure_poll(void (*poll)()) { g_failure_poll = poll; }

void throw_if_interrupted() {
  if (g_signal) throw InterruptedError(fmt::format("interrupted by signal {}", int(g_signal)));
  if (g_failure_poll) g_failure_poll();
}

}  // namespace gdr
