#include "library_facts.h"

#include <mpi.h>

#include "mpi_cuda_aware.h"
#include "mps.h"

namespace gdr {

std::vector<std::pair<std::string, std::string>> library_facts() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  return {{"mpi.library", std::string(v, len)},
          {"mpi.cuda_aware", mpi::cuda_awareness_line()},
          {"cuda.mps", mps_state()}};  // jobs/with_mps.sh manages it
}

}  // namespace gdr
