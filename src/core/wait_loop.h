// The one shape of every wait in gdrbench: spin on a condition and, every
// `every` spins (and at once after a signal), stop for a checkpoint that
// throws if the run was interrupted (or, on rank 0, another rank failed)
// and looks at the deadline. The deadline starts at the first checkpoint,
// so a wait that ends within a few spins (a ping-pong's, many times a
// microsecond) never reads the clock; it starts again after progressed().
// The caller throws its own TimeoutError, naming whom it waited for.
//
//   for (WaitLoop loop(boot.timeout()); !done(); )
//     if (loop.tick() && loop.expired()) throw TimeoutError("... waiting for rank 3 ...");
#pragma once

#include "errors.h"
#include "signals.h"

namespace gdr {

class WaitLoop {
 public:
  // `every` must be a power of two; 1 checks on every spin.
  explicit WaitLoop(double timeout_s, unsigned every = 256) : timeout_s_(timeout_s), mask_(every - 1) {}

  // Call once per spin that found the condition unmet. True at a
  // checkpoint, after throw_if_interrupted(): then ask expired().
  bool tick() {
    if ((++spins_ & mask_) != 0 && !interrupted()) return false;
    throw_if_interrupted();
    return true;
  }
  // Only at a checkpoint: whether the wait has used up its time.
  bool expired() {
    if (!started_) {
      deadline_ = Deadline(timeout_s_);
      started_ = true;
    }
    return deadline_.expired();
  }
  // The wait moved on (a stall, not the whole wait, is bounded).
  void progressed() { started_ = false; }
  double timeout() const { return timeout_s_; }

 private:
  double timeout_s_;
  unsigned mask_;
  unsigned spins_ = 0;
  bool started_ = false;
  Deadline deadline_{Deadline::unset()};  // no clock read for a wait that ends before a checkpoint
};

}  // namespace gdr
