#include "metadata.h"

#include "secrets.h"

#include <algorithm>
#include <cctype>
#include <ctime>

namespace gdr {

std::string utc_now(bool compact) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, compact ? "%Y%m%dT%H%M%S" : "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string join_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    std::string a = argv[i];
    bool quote = a.empty() || a.find_first_of(" \t'\"$") != std::string::npos;
    s += quote ? "'" + a + "'" : a;
  }
  return s;
}

std::vector<std::pair<std::string, std::string>> captured_environment(char** envp) {
  static const char* prefixes[] = {"UCX_", "OMPI_", "NCCL_", "CUDA_", "SLURM_", "PMIX_", "GDR_"};
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = envp; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string name = kv.substr(0, eq);
    bool wanted = std::any_of(std::begin(prefixes), std::end(prefixes),
                              [&](const char* p) { return name.rfind(p, 0) == 0; });
    std::string value = kv.substr(eq + 1);
    if (wanted && !looks_secret(name) && !value_looks_secret(value)) out.emplace_back(name, value);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gdr
