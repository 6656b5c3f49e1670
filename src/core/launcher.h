// What the launcher (mpirun, srun, a PMI) tells a process in its
// environment before MPI_Init: the one list of those variables, for the
// code that must know its rank before MPI is up (error lines, the GPU
// choice, whether MPI_Init is safe to call).
#pragma once

#include <cstdlib>
#include <initializer_list>

namespace gdr::launcher {

inline const char* first_set(std::initializer_list<const char*> vars) {
  for (const char* v : vars)
    if (const char* s = std::getenv(v)) return s;
  return nullptr;
}

// This process's world rank; 0 when no launcher says.
inline int rank() {
  const char* s = first_set({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"});
  return s ? std::atoi(s) : 0;
}

// Its rank among the ranks of its node; 0 when no launcher says.
inline int local_rank() {
  const char* s = first_set({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK"});
  return s ? std::atoi(s) : 0;
}

// Ranks on this node; 1 when no launcher says.
inline int local_size() {
  const char* s = first_set({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"});
  return s ? std::atoi(s) : 1;
}

// Started by an MPI launcher (mpirun, a PMI): MPI_Init will find its job.
inline bool by_mpi() { return first_set({"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}); }

// That, or one task of several of a Slurm step (srun without --mpi).
inline bool present() {
  if (by_mpi()) return true;
  const char* step = std::getenv("SLURM_STEP_ID");
  const char* ntasks = std::getenv("SLURM_NTASKS");
  return step && ntasks && std::atoi(ntasks) > 1;
}

}  // namespace gdr::launcher
