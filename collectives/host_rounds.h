// The host-level schedule of --pattern host-rounds: a round-robin tournament
// (circle method) over hosts; in each round every rank of host A runs
// against the rank of host B on the same rail, all host pairs of the round
// at once. rounds(H) rounds for H hosts, each a matching of host pairs;
// every host pair meets exactly once. Pure functions of a host map, so the
// planner is tested without MPI (tests/unit/test_host_rounds.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "patterns.h"

namespace gdr::patterns {

// Where each rank runs: its host (0..H-1, in order of first appearance) and
// its rail (ranks of two hosts pair when their rails match: the NIC plane
// when the topology names it, else the rank's index on its host).
struct HostMap {
  std::vector<int> host;          // rank -> host index
  std::vector<int> rail;          // rank -> rail
  std::vector<std::string> names; // host index -> hostname
  bool by_nic = false;            // rails from the ranks' NICs, not their local index
  std::string rails_from;         // how, for the file (schedule.host_rounds.rails); set by the run
  int hosts() const { return static_cast<int>(names.size()); }
};

// From each rank's hostname (Bootstrap's gathered names) and, where known,
// its NIC ("mlx5_0"; empty: not known). Rails are the NIC's index among the
// host's NICs when every rank names one and every host has the same NICs,
// else the rank's index among its host's ranks (local index).
HostMap host_map(const std::vector<std::string>& hostnames, const std::vector<std::string>& nics = {});

// "" when host-rounds can run on the map, else the one line why not (one
// host; hosts with different rank counts).
std::string host_rounds_problem(const HostMap& m);

// The host pairs (a < b) of round r over H hosts.
std::vector<std::pair<int, int>> host_pairs(int hosts, int round);
// The rank pairs (lower host's rank first) of round r: rail i of host a
// with rail i of host b, for every host pair of the round.
std::vector<Flow> host_round_flows(const HostMap& m, int round);
// "0-1 2-3; 0-2 1-3; ...": the host pairs of every round run (the first `limit`; 0: all), for the file.
std::string describe_rounds(int hosts, int limit);

}  // namespace gdr::patterns
