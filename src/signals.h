// SIGINT/SIGTERM turn into a flag that every wait loop checks, so an
// interrupted run closes its result file cleanly and marks it.
#pragma once

namespace gdr {

void install_signal_handlers();
bool interrupted();
int interrupt_signal();
// Throws RunError("interrupted by signal N") when a signal arrived.
void throw_if_interrupted();

}  // namespace gdr
