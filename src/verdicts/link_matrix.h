// The link matrix, to find the slow link: for every p2p test, transport, memory kind,
// path and pattern that measures one link per rank at a time (`pair`, one
// pair at a time; `rounds`, every rank in one pair per step), the median
// time of each link sender -> receiver per message size, one cell per link measured.
// Rank 0's HDF5 sink writes them under /link_cells at the end of the run.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "record/results.h"

namespace gdr {

// One group's measured links, one cell per (size, sender, receiver): as many
// cells as links were measured, not ranks x ranks (8,192 ranks would make a
// dense matrix of 1 GB per size; host-rounds measures 1/8 of it, and with
// --max-rounds a number of links linear in the hosts).
struct LinkTable {
  std::string test, transport, mem, path, pattern;
  std::string test_kind;  // the test's traits (collectives/test.h), for readers of /link_cells
  int directions = 1;
  int ranks = 0;
  std::vector<std::size_t> bytes;  // ascending
  std::vector<int> size, src, dst;  // per cell: index into bytes, sender, receiver
  std::vector<double> time_us;      // per cell: median over iterations of the timing rank's time
  std::vector<double> algbw_gbps;   // per cell: the test's bytes per time (bibw: both directions)
  std::string name() const;         // "bw_mpi_host_direct_rounds"
};

class LinkMatrices {
 public:
  // Takes a case's per-link medians if it is a `pair` or `rounds` p2p case.
  void add(const CaseRecord& r, double algbw_bytes);
  std::vector<LinkTable> tables() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  struct Cell {
    int src, dst;
    double time_us, gbps;
  };
  std::map<Key, std::map<std::size_t, std::vector<Cell>>> cells_;
  std::map<Key, int> ranks_;
  std::map<Key, TestTraits> traits_;
};

}  // namespace gdr
