#include "mps.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gdr {
namespace {

// The pid of a visible nvidia-cuda-mps-control, or 0. comm is cut to 15
// characters, which the MPS server shares: argv[0] tells them apart.
long mps_daemon_pid() {
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(e.path() / "cmdline");
    std::string argv0;
    if (!std::getline(cmdline, argv0, '\0')) continue;
    if (std::filesystem::path(argv0).filename() == "nvidia-cuda-mps-control") return std::atol(name.c_str());
  }
  return 0;
}

}  // namespace

std::string mps_control_socket(const std::string& root) {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::string path = root + (dir && *dir ? dir : "/tmp/nvidia-mps") + "/control";
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return {};
  return path;
}

std::string mps_state() {
  const char* env = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string pipes = env && *env ? env : "/tmp/nvidia-mps";
  const bool socket = !mps_control_socket().empty();
  const long pid = mps_daemon_pid();
  if (pid && socket)
    return fmt::format("on: nvidia-cuda-mps-control runs (pid {}), control socket {}/control", pid, pipes);
  if (pid)
    return fmt::format("unclear: nvidia-cuda-mps-control runs (pid {}) but {}/control is no socket "
                       "(another CUDA_MPS_PIPE_DIRECTORY?)", pid, pipes);
  if (socket)
    return fmt::format("unclear: {}/control exists but no nvidia-cuda-mps-control is visible here "
                       "(another PID namespace, or a stale socket)", pipes);
  return fmt::format("off: no nvidia-cuda-mps-control process, no control socket in {}", pipes);
}

}  // namespace gdr
