// Who is where, asked when a collective wait times out. An MPI_Ibarrier
// cannot say which rank is missing; so the rank that timed out asks every
// other rank on a communicator of its own, and each live rank answers from
// whatever wait loop it is in (every loop calls throw_if_interrupted, whose
// poll answers). Ranks that do not answer within a moment are dead, stopped
// or stuck outside gdrbench's loops: the timeout then names them, and says
// where each of the others was.
#pragma once

#include <mpi.h>

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gdr {

class RollCall {
 public:
  // Collective over `comm` (duplicates it).
  RollCall(MPI_Comm comm, int rank, int size);
  ~RollCall();
  RollCall(const RollCall&) = delete;
  RollCall& operator=(const RollCall&) = delete;

  // Answers every question that has arrived with `where` (cheap when none).
  void answer(const std::string& where);
  // Asks every other rank and waits up to `seconds` for the answers, still
  // answering others who ask meanwhile. Per rank: its answer, or nullopt.
  std::vector<std::optional<std::string>> ask(double seconds, const std::string& where);

 private:
  void post_question_recv();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_, size_;
  MPI_Request question_ = MPI_REQUEST_NULL;
  char question_buf_[8] = {};
  struct Reply {
    MPI_Request req = MPI_REQUEST_NULL;
    std::string text;  // in a list node: never moves while MPI reads it
  };
  std::list<Reply> replies_;  // answers we sent, until they complete
};

// "rank 2 (hostB) did not answer; rank 1 (hostA) was in MPI_Ibarrier during ..."
// from ask()'s result; `who` names a rank.
template <typename Who>
std::string describe_roll_call(const std::vector<std::optional<std::string>>& answers, int me, Who who) {
  std::string silent, others;
  for (int r = 0; r < static_cast<int>(answers.size()); ++r) {
    if (r == me) continue;
    if (!answers[r]) silent += (silent.empty() ? "" : ", ") + who(r);
    else others += "; " + who(r) + " was " + *answers[r];
  }
  if (silent.empty()) return "every rank answered" + others;
  return silent + " did not answer (dead, stopped or stuck)" + others;
}

}  // namespace gdr
