// How a timed-out wait reports the roll call (the MPI part runs in
// tests/mpi: test_results.py stops a rank and expects it named).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "src/core/wait_census.h"

namespace {
std::string name(int r) { return fmt::format("rank {} (h{})", r, r); }
}  // namespace

TEST(RollCall, NamesTheSilentRanksAndWhereTheOthersWere) {
  std::vector<std::optional<std::string>> a = {std::nullopt, std::nullopt, "in MPI_Ibarrier during x",
                                               std::nullopt};
  EXPECT_EQ(gdr::describe_roll_call(a, 0, name),
            "rank 1 (h1), rank 3 (h3) did not answer (dead, stopped or stuck); rank 2 (h2) was in "
            "MPI_Ibarrier during x");
}

TEST(RollCall, EveryoneAnswered) {
  std::vector<std::optional<std::string>> a = {"busy during y", std::nullopt};
  EXPECT_EQ(gdr::describe_roll_call(a, 1, name), "every rank answered; rank 0 (h0) was busy during y");
}
