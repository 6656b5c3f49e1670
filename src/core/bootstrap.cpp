#include "bootstrap.h"

#include "wait_census.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <thread>

#include "errors.h"
#include "signals.h"
#include "wait_loop.h"

namespace gdr {
namespace {

std::string g_activity = "start-up";
Bootstrap* g_self = nullptr;  // this process's bootstrap, for the wait loops' poll

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RunError(fmt::format("{} failed: {}", call, std::string(msg, len)));
}

}  // namespace

void set_activity(std::string what) { g_activity = std::move(what); }
const std::string& activity() { return g_activity; }

Bootstrap::Bootstrap(int* argc, char*** argv, double timeout_s) : timeout_s_(timeout_s) {
  int provided = 0;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  // Errors come back as codes so we can name the rank and call ourselves.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);

  std::string me = local_hostname();
  hosts_.assign(size_, {});
  hosts_[rank_] = me;  // so who() works while gathering
  auto blobs = allgather(std::as_bytes(std::span(me.data(), me.size())));
  for (int r = 0; r < size_; ++r)
    hosts_[r].assign(reinterpret_cast<const char*>(blobs[r].data()), blobs[r].size());
  check_mpi(MPI_Comm_dup(comm_, &failure_comm_), "MPI_Comm_dup");
  if (rank_ == 0)
    MPI_Irecv(failure_buf_, sizeof failure_buf_ - 1, MPI_CHAR, MPI_ANY_SOURCE, 0, failure_comm_,
              &failure_req_);
  roll_ = std::make_unique<RollCall>(comm_, rank_, size_);
  g_self = this;
  set_failure_poll([] { if (g_self) g_self->poll(); });
  int lr = local_rank_;
  auto lrs = allgather(std::as_bytes(std::span(&lr, 1)));
  local_ranks_.resize(size_);
  for (int r = 0; r < size_; ++r) std::memcpy(&local_ranks_[r], lrs[r].data(), sizeof(int));
}

Bootstrap::~Bootstrap() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (g_self == this) {
    set_failure_poll(nullptr);
    g_self = nullptr;
  }
  roll_.reset();
  if (failure_req_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&failure_req_);
    MPI_Wait(&failure_req_, MPI_STATUS_IGNORE);
  }
  if (failure_comm_ != MPI_COMM_NULL) MPI_Comm_free(&failure_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  MPI_Finalize();
}

std::string Bootstrap::who(int r) const {
  if (r < 0 || r >= static_cast<int>(hosts_.size()) || hosts_[r].empty())
    return fmt::format("rank {}", r);
  return fmt::format("rank {} ({})", r, hosts_[r]);
}

void Bootstrap::wait(MPI_Request& req, const char* what) {
  // Where a roll call finds this rank, for as long as it waits here.
  struct Waiting {
    const char*& slot;
    Waiting(const char*& s, const char* w) : slot(s) { slot = w; }
    ~Waiting() { slot = nullptr; }
  } waiting{waiting_in_, what};
  int done = 0;
  for (WaitLoop loop(timeout_s_, 1024);;) {
    int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) check_mpi(rc, what);
    if (done) return;
    for (auto& [owner, progress] : idle_progress_) progress();
    if (!loop.tick()) continue;
    if (loop.expired())
      throw TimeoutError(fmt::format("{}: timed out after {:g} s in {} during {}: {}", me(), timeout_s_,
                                     what, activity(), who_is_missing()));
    std::this_thread::yield();
  }
}

void Bootstrap::add_idle_progress(const void* owner, std::function<void()> fn) {
  idle_progress_.emplace_back(owner, std::move(fn));
}

void Bootstrap::remove_idle_progress(const void* owner) {
  std::erase_if(idle_progress_, [owner](auto& p) { return p.first == owner; });
}

std::string Bootstrap::where() const {
  return waiting_in_ ? fmt::format("in {} during {}", waiting_in_, activity())
                     : fmt::format("busy during {}", activity());
}

std::string Bootstrap::who_is_missing() {
  if (!roll_)  // still starting up: no roll call yet
    return fmt::format("{} did not arrive (dead, hung or still in an earlier step)",
                       size_ == 2 ? who(1 - rank_) : "some rank");
  return roll_call();
}

std::string Bootstrap::roll_call() const {
  if (!roll_ || size_ < 2) return {};
  auto answers = roll_->ask(std::min(timeout_s_, 2.0), where());
  return describe_roll_call(answers, rank_, [this](int r) { return who(r); });
}

void Bootstrap::poll() {
  // Rate-limited: some wait loops poll on every spin, and a question can
  // wait a millisecond for its answer.
  if (auto now = CoarseClock::now(); roll_ && now >= next_answer_) {
    next_answer_ = now + std::chrono::milliseconds(1);
    roll_->answer(where());
  }
  if (rank_ == 0) check_peer_failure();
}

std::vector<std::vector<std::byte>> Bootstrap::allgather(std::span<const std::byte> mine) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_);
  MPI_Request req;
  check_mpi(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_, &req), "MPI_Iallgather");
  wait(req, "MPI_Iallgather (lengths)");
  std::vector<int> displs(size_, 0);
  for (int r = 1; r < size_; ++r) displs[r] = displs[r - 1] + lens[r - 1];
  std::vector<std::byte> all(static_cast<std::size_t>(displs[size_ - 1] + lens[size_ - 1]));
  check_mpi(MPI_Iallgatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), displs.data(),
                            MPI_BYTE, comm_, &req),
            "MPI_Iallgatherv");
  wait(req, "MPI_Iallgatherv (endpoint blobs)");
  std::vector<std::vector<std::byte>> out(size_);
  for (int r = 0; r < size_; ++r)
    out[r].assign(all.begin() + displs[r], all.begin() + displs[r] + lens[r]);
  return out;
}

std::vector<double> Bootstrap::gather_to_root(std::span<const double> mine) {
  std::vector<double> all(rank_ == 0 ? mine.size() * size_ : 0);
  MPI_Request req;
  check_mpi(MPI_Igather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                        static_cast<int>(mine.size()), MPI_DOUBLE, 0, comm_, &req),
            "MPI_Igather");
  wait(req, "MPI_Igather (timings)");
  return all;
}

std::string Bootstrap::broadcast(const std::string& from_root) {
  int len = static_cast<int>(from_root.size());
  MPI_Request req;
  check_mpi(MPI_Ibcast(&len, 1, MPI_INT, 0, comm_, &req), "MPI_Ibcast");
  wait(req, "MPI_Ibcast");
  std::string out = rank_ == 0 ? from_root : std::string(len, '\0');
  check_mpi(MPI_Ibcast(out.data(), len, MPI_CHAR, 0, comm_, &req), "MPI_Ibcast");
  wait(req, "MPI_Ibcast");
  return out;
}

template <typename T>
T Bootstrap::max_over_ranks(T value, MPI_Datatype type) {
  T out = value;
  MPI_Request req;
  check_mpi(MPI_Iallreduce(&value, &out, 1, type, MPI_MAX, comm_, &req), "MPI_Iallreduce");
  wait(req, "MPI_Iallreduce");
  return out;
}

int Bootstrap::allreduce_max(int value) { return max_over_ranks(value, MPI_INT); }
double Bootstrap::allreduce_max(double value) { return max_over_ranks(value, MPI_DOUBLE); }

void Bootstrap::barrier() {
  MPI_Request req;
  check_mpi(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
  wait(req, "MPI_Ibarrier");
}

void Bootstrap::check_peer_failure() {
  if (failure_req_ == MPI_REQUEST_NULL) return;
  int done = 0;
  MPI_Status st;
  MPI_Test(&failure_req_, &done, &st);
  if (!done) return;
  failure_req_ = MPI_REQUEST_NULL;
  // "\x01SIG|text": the rank was interrupted (notify_interrupt), not failed.
  if (failure_buf_[0] == '\x01') {
    char* bar = std::strchr(failure_buf_, '|');
    int sig = std::atoi(failure_buf_ + 1);
    throw InterruptedError(fmt::format("{}: {}", who(st.MPI_SOURCE), bar ? bar + 1 : ""), sig);
  }
  throw RunError(fmt::format("{} failed: {}", who(st.MPI_SOURCE), failure_buf_));
}

void Bootstrap::notify_failure(const std::string& message) {
  if (rank_ == 0 || failure_comm_ == MPI_COMM_NULL) return;
  std::string m = message.substr(0, sizeof failure_buf_ - 1);
  MPI_Request req;
  if (MPI_Isend(m.c_str(), static_cast<int>(m.size() + 1), MPI_CHAR, 0, 0, failure_comm_, &req) !=
      MPI_SUCCESS)
    return;
  // Give rank 0 a moment to record the failure; it aborts the job itself.
  Deadline deadline(std::min(timeout_s_, 5.0));
  for (int done = 0; !done && !deadline.expired();) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
}

void Bootstrap::notify_interrupt(int sig, const std::string& message) {
  if (rank_ == 0 || failure_comm_ == MPI_COMM_NULL) return;
  std::string m = fmt::format("\x01{}|{}", sig, message).substr(0, sizeof failure_buf_ - 1);
  MPI_Request req;
  if (MPI_Isend(m.c_str(), static_cast<int>(m.size() + 1), MPI_CHAR, 0, 0, failure_comm_, &req) !=
      MPI_SUCCESS)
    return;
  // Stay: Open MPI's mpirun, stopping a job, SIGKILLs every rank the moment
  // one of them exits, which would cut rank 0 off mid-write. Rank 0 exits
  // once its file is closed, and the launcher then ends this rank.
  Deadline deadline(5.0);
  for (int done = 0; !deadline.expired();) {
    if (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::milliseconds(done ? 20 : 1));
  }
}

void Bootstrap::abort(const std::string& message, int code) {
  std::fprintf(stderr, "gdrbench: %s\n", message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace gdr
