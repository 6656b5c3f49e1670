// The facts every run records about the libraries beneath it, so that the
// commands above name no library or memory kind themselves.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gdr {

// In this order: mpi.library (MPI_Get_library_version), mpi.cuda_aware
// (mpi_cuda_aware.h), cuda.mps (mps.h: CUDA MPS on this rank's node).
// Needs MPI initialized.
std::vector<std::pair<std::string, std::string>> library_facts();

}  // namespace gdr
