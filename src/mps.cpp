#include "mps.h"

#include <sys/stat.h>

#include <cstdlib>

namespace gdr {

std::string mps_control_socket(const std::string& root) {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::string path = root + (dir && *dir ? dir : "/tmp/nvidia-mps") + "/control";
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return {};
  return path;
}

}  // namespace gdr
