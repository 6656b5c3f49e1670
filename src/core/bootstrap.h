// MPI bootstrap: who am I, who are my peers, and a way to exchange opaque
// endpoint blobs. Transports connect through this; nothing else in the
// program calls MPI except the mpi transport and the MPI reference rows.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "errors.h"

namespace gdr {

class RollCall;

class Bootstrap {
 public:
  // Initializes MPI (thread level FUNNELED) and learns rank, size, local
  // rank and hosts. `timeout_s` bounds every collective wait made here.
  Bootstrap(int* argc, char*** argv, double timeout_s);
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  const std::string& host() const { return hosts_[rank_]; }
  const std::string& host_of(int rank) const { return hosts_.at(rank); }
  const std::vector<std::string>& hosts() const { return hosts_; }
  const std::vector<int>& local_ranks() const { return local_ranks_; }
  double timeout() const { return timeout_s_; }
  void set_timeout(double s) { timeout_s_ = s; }

  // Every rank contributes a blob (any length); every rank gets all blobs.
  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine);
  // Gathers doubles to rank 0 (row r = rank r). Others get an empty vector.
  std::vector<double> gather_to_root(std::span<const double> mine);
  // Broadcast a string from rank 0.
  std::string broadcast(const std::string& from_root);
  // Logical OR / max of an int over ranks.
  int allreduce_max(int value);
  double allreduce_max(double value);
  void barrier();

  // "rank 3 (node07)": how errors name a rank.
  std::string who(int rank) const;
  std::string me() const { return who(rank_); }

  // Rank 0 listens for other ranks' failures from construction on; a rank
  // that fails tells rank 0 (which then closes the result file as failed)
  // before the job is aborted.
  void notify_failure(const std::string& message);
  // A rank other than 0 that was interrupted by signal `sig`: tells rank 0
  // (which closes the file `interrupted`) and stays up to 5 s for it.
  void notify_interrupt(int sig, const std::string& message);
  // Rank 0: throws RunError("rank R (host) failed: ...") once one arrived.
  void check_peer_failure();
  // After a wait timed out: asks every rank where it is (a moment at most)
  // and says who did not answer and where the others were.
  std::string roll_call() const;
  // Every wait loop's poll (through throw_if_interrupted): answers a roll
  // call from a rank whose collective timed out; rank 0 also checks failures.
  void poll();

  // Work that must go on while this rank waits in a collective: a transport
  // whose library sends its protocol's last messages (a rendezvous' final
  // acknowledgement) only when progressed registers it here, so a peer
  // still waiting for them is not left hanging (keyed by its owner).
  void add_idle_progress(const void* owner, std::function<void()> fn);
  void remove_idle_progress(const void* owner);

  // Ends the whole job: prints `message` (prefixed by this rank) and aborts.
  [[noreturn]] void abort(const std::string& message, int code);

  MPI_Comm comm() const { return comm_; }

 private:
  // Waits on a non-blocking collective with the deadline; names `what`.
  void wait(MPI_Request& req, const char* what);
  template <typename T> T max_over_ranks(T value, MPI_Datatype type);
  // What the message says after a collective timed out: who is missing.
  std::string who_is_missing();
  // What this rank answers a roll call with.
  std::string where() const;

  std::unique_ptr<RollCall> roll_;
  std::vector<std::pair<const void*, std::function<void()>>> idle_progress_;
  const char* waiting_in_ = nullptr;  // the collective wait in progress, if any
  CoarseClock::time_point next_answer_{};  // answer() at most every millisecond (errors.h: why coarse)
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm failure_comm_ = MPI_COMM_NULL;  // its own communicator: no tag can collide
  MPI_Request failure_req_ = MPI_REQUEST_NULL;
  char failure_buf_[2048] = {};
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::vector<std::string> hosts_;
  std::vector<int> local_ranks_;
  double timeout_s_;
};

// What the program is doing right now, for timeout and error messages
// ("allreduce float sum 1048576 B, iteration 7"). Set by the runner.
void set_activity(std::string what);
const std::string& activity();

}  // namespace gdr
