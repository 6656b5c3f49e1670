#include "wait_census.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "errors.h"

namespace gdr {
namespace {
constexpr int kQuestion = 1, kAnswer = 2;
constexpr int kMaxAnswer = 512;
}  // namespace

RollCall::RollCall(MPI_Comm comm, int rank, int size) : rank_(rank), size_(size) {
  if (int rc = MPI_Comm_dup(comm, &comm_); rc != MPI_SUCCESS)
    throw RunError(fmt::format("rank {}: MPI_Comm_dup (roll call) failed with code {}", rank, rc));
  post_question_recv();
}

RollCall::~RollCall() {
  if (question_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&question_);
    MPI_Wait(&question_, MPI_STATUS_IGNORE);
  }
  for (Reply& r : replies_)
    if (r.req != MPI_REQUEST_NULL) {
      MPI_Cancel(&r.req);
      MPI_Wait(&r.req, MPI_STATUS_IGNORE);
    }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void RollCall::post_question_recv() {
  MPI_Irecv(question_buf_, sizeof question_buf_, MPI_CHAR, MPI_ANY_SOURCE, kQuestion, comm_, &question_);
}

void RollCall::answer(const std::string& where) {
  for (;;) {
    int done = 0;
    MPI_Status st;
    if (question_ == MPI_REQUEST_NULL || MPI_Test(&question_, &done, &st) != MPI_SUCCESS || !done) break;
    Reply& r = replies_.emplace_back(Reply{MPI_REQUEST_NULL, where.substr(0, kMaxAnswer - 1)});
    MPI_Isend(r.text.c_str(), static_cast<int>(r.text.size() + 1), MPI_CHAR, st.MPI_SOURCE, kAnswer,
              comm_, &r.req);
    post_question_recv();
  }
  // Forget the answers that have gone (a few at most: one per question).
  replies_.remove_if([](Reply& r) {
    int done = 0;
    MPI_Test(&r.req, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

std::vector<std::optional<std::string>> RollCall::ask(double seconds, const std::string& where) {
  std::vector<std::optional<std::string>> out(size_);
  std::vector<MPI_Request> asks(size_, MPI_REQUEST_NULL), answers(size_, MPI_REQUEST_NULL);
  std::vector<std::vector<char>> bufs(size_, std::vector<char>(kMaxAnswer, '\0'));
  char q = '?';
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Irecv(bufs[r].data(), kMaxAnswer, MPI_CHAR, r, kAnswer, comm_, &answers[r]);
    MPI_Isend(&q, 1, MPI_CHAR, r, kQuestion, comm_, &asks[r]);
  }
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int left = size_ - 1;
  while (left > 0 && std::chrono::steady_clock::now() < end) {
    answer(where);
    for (int r = 0; r < size_; ++r) {
      int done = 0;
      if (answers[r] == MPI_REQUEST_NULL) continue;
      MPI_Test(&answers[r], &done, MPI_STATUS_IGNORE);
      if (!done) continue;
      out[r] = std::string(bufs[r].data());
      --left;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Unanswered questions and receives are cancelled: the job ends right after.
  for (int r = 0; r < size_; ++r)
    for (MPI_Request* req : {&asks[r], &answers[r]})
      if (*req != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done) {
          MPI_Cancel(req);
          MPI_Request_free(req);
        }
      }
  return out;
}

}  // namespace gdr
