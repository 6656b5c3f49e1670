// The verdict at the end of a run: a few lines a person reads
// first, as nccl-tests' "Avg bus bandwidth". Built on rank 0 from the rows.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "record/results.h"

namespace gdr {

class Verdict {
 public:
  void add(const CaseRecord& r);
  // One line per transport x memory kind x path of our tests, then the
  // shared-GPU line when `shared_gpu` is not empty. `facts` are the run's
  // (the doctor's findings give the reason GPUDirect was not used).
  std::vector<std::string> lines(const std::vector<std::pair<std::string, std::string>>& facts,
                                 const std::string& shared_gpu) const;

 private:
  struct Row {
    std::string test, transport, mem, path;
    TestTraits traits;
    std::size_t bytes = 0;
    int src = -1;
    double busbw = 0, time_us = 0, pct = 0;
    bool has_peak = false, via_host = false;
    std::string cause;
    std::string unknown;  // the path is not established: why (then no "yes")
  };
  using Key = std::tuple<std::string, std::string, std::string>;  // transport, mem, path
  using Groups = std::map<Key, std::vector<const Row*>>;
  static std::string slower_than_mpi(const Groups& groups, const Key& key, const std::vector<const Row*>& rows);
  // One-way streaming rows (bw): the verdict's like-for-like comparisons.
  static bool one_way_bandwidth(const Row& r) {
    return r.traits.kind == TestKind::bandwidth && r.traits.directions == 1;
  }
  std::vector<Row> rows_;
};

}  // namespace gdr
