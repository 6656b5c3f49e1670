// What the launcher (mpirun, srun, a PMI) tells a process in its
// environment before MPI_Init: the one list of those variables, for the
// code that must know its rank before MPI is up (error lines, the GPU
// choice, whether MPI_Init is safe to call).
#pragma once

#include <cstdlib>
#include <initializer_list>

#include "errors.h"
#include "numbers.h"

namespace gdr::launcher {

inline const char* first_set(std::initializer_list<const char*> vars) {
  for (const char* v : vars)
    if (const char* s = std::getenv(v)) return s;
  return nullptr;
}

// The launcher's numbers (ranks, counts) read by core/numbers.h's reader. A value that is
// not one is taken as unset, not refused: they are read before MPI is up, by every rank at
// once, and name no choice of the user's (docs/operators/numbers.md).
inline constexpr NumberRule kNumberRule{"OMPI_COMM_WORLD_*, PMI*_RANK, SLURM_* ranks and counts", true, 0, 16777215,
                                        false, "the launcher's; a value out of range is taken as unset"};

inline int whole_or(const char* s, int fallback) {
  if (!s) return fallback;
  try {
    return static_cast<int>(read_rule(s, kNumberRule));
  } catch (const UsageError&) {
    return fallback;
  }
}

// This process's world rank; 0 when no launcher says.
inline int rank() {
  const char* s = first_set({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"});
  return whole_or(s, 0);
}

// Its rank among the ranks of its node; 0 when no launcher says.
inline int local_rank() {
  const char* s = first_set({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK"});
  return whole_or(s, 0);
}

// Ranks on this node; 1 when no launcher says.
inline int local_size() {
  const char* s = first_set({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"});
  return whole_or(s, 1);
}

// Started by an MPI launcher (mpirun, a PMI): MPI_Init will find its job.
inline bool by_mpi() { return first_set({"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}); }

// That, or one task of several of a Slurm step (srun without --mpi).
inline bool present() {
  if (by_mpi()) return true;
  const char* step = std::getenv("SLURM_STEP_ID");
  const char* ntasks = std::getenv("SLURM_NTASKS");
  return step && whole_or(ntasks, 0) > 1;
}

}  // namespace gdr::launcher
