// A synthetic bw case of the link patterns, for the unit tests and the scale benchmark: every
// field rank 0's judging reads, each flow's sender timing `iters` iterations of time(a, b)
// seconds (NaN for ranks in no flow).
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "collectives/test.h"
#include "record/results.h"

namespace gdr {

inline CaseRecord synthetic_bw_case(int ranks, int iters, std::size_t bytes, const std::string& pattern, int step,
                                    std::vector<std::pair<int, int>> flows,
                                    const std::function<double(int, int)>& time) {
  CaseRecord r;
  r.params.test = "bw";
  r.params.transport = "mpi";
  r.params.has_dtype = false;
  r.params.bytes = bytes;
  r.params.pattern = pattern;
  r.params.step = step;
  r.params.iters = iters;
  r.params.flows = std::move(flows);
  r.params.traits = find_test("bw")->traits;
  r.ranks = ranks;
  r.times.assign(static_cast<std::size_t>(ranks) * iters, std::numeric_limits<double>::quiet_NaN());
  for (auto [a, b] : r.params.flows)
    for (int i = 0; i < iters; ++i) r.times[static_cast<std::size_t>(a) * iters + i] = time(a, b);
  return r;
}

}  // namespace gdr
