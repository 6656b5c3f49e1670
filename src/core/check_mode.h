// --check: which iterations' data are verified. after (the default, as
// nccl-tests): the timed iterations run unchecked and one more untimed batch
// is checked, so no fill or check kernel shares the GPU with a timed window
// (checking every window cost 20-50 % of device bw on an H200 when two
// processes time-slice the GPU without MPS). every: every timed iteration
// too, each filled and checked outside its window. none: nothing.
// The numbers are what the HDF5 attribute `check` stores (1 meant "every"
// before `after` existed, and still does).
#pragma once

namespace gdr {

enum class CheckMode { none = 0, every = 1, after = 2 };

inline const char* check_name(CheckMode m) {
  switch (m) {
    case CheckMode::none: return "none";
    case CheckMode::every: return "every";
    case CheckMode::after: return "after";
  }
  return "?";
}

}  // namespace gdr
