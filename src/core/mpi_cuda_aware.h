// Whether this MPI's point-to-point calls may be handed device pointers.
#pragma once

#include <string>

namespace gdr::mpi {

struct CudaAwareness {
  bool aware = false;
  // Whether its collectives (MPI_Allreduce) take device memory too: only an
  // MPI built with CUDA; through pml ucx the reductions run on the CPU.
  bool collectives = false;
  std::string pml;  // Open MPI's active PML ("ucx", "ob1"); empty when unknown
  std::string how;  // one line: what was checked, and for "no" what to do
};

// Needs MPI initialized: Open MPI's answer depends on the PML it selected at
// MPI_Init (its ob1 segfaults on device pointers unless Open MPI itself was
// built with CUDA). Probes once per process.
const CudaAwareness& cuda_awareness();

// "yes: ..." or "no: ...": the line for `gdrbench list` and the run's facts.
std::string cuda_awareness_line();

// For `gdrbench list` (no Bootstrap there): empty when device pointers work,
// else the line. Under a launcher it initializes MPI (finalized at exit) and
// probes; alone it answers from the headers (MPIX_CUDA_AWARE_SUPPORT).
std::string device_memory_reason_for_list();

}  // namespace gdr::mpi
