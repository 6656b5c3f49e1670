// The sweep: the run's plan (plan.h) run case by case, each case gathered to
// rank 0 and handed to the result sinks as soon as it finishes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/bootstrap.h"
#include "options/options.h"
#include "planning/plan.h"
#include "record/results.h"

namespace gdr {

struct SweepTotals {
  int cases = 0;
  std::uint64_t wrong = 0;
};

// `sinks` is empty on ranks other than 0. Throws UsageError when a requested
// transport cannot run here, RunError/TimeoutError when a case fails.
SweepTotals run_sweep(Bootstrap& boot, const RunOptions& opt, const RunPlan& plan,
                      std::vector<std::unique_ptr<ResultSink>>& sinks, RunMetadata& meta);

}  // namespace gdr
