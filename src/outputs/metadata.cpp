#include "outputs/metadata.h"

#include "outputs/redaction.h"
#include "core/shell_quote.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>
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
  // Each word redacted before it is quoted (a secret inside one word), then the
  // line (a flag and its value in two words: --password x, sshpass -p x).
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += shell_quote(redact(argv[i]));  // pastes back into a shell, newlines and quotes included
  }
  return redact(s);
}

namespace {

// The libraries in a measurement's path, and gdrbench's own (README.md
// "What the result file keeps"): MPI, PMIx, UCX, NCCL, CUDA, rdma-core, HDF5.
constexpr const char* kPrefixes[] = {"OMPI_", "OPAL_", "PRTE_", "MPICH_", "I_MPI_", "MV2_", "PMIX_", "UCX_",
                                     "NCCL_", "CUDA_", "IBV_", "RDMAV_", "MLX5_", "MLX4_", "HDF5_", "GDR_",
                                     // Slurm's placement: which job, nodes, tasks, CPUs, GPUs, bindings
                                     "SLURM_STEP_", "SLURM_GPU", "SLURM_CPU", "SLURM_MEM_BIND", "SLURM_TASKS"};
constexpr const char* kSlurmNames[] = {
    "SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_NNODES",
    "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_JOB_PARTITION",
    "SLURM_JOB_GPUS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_DISTRIBUTION", "SLURM_MPI_TYPE",
    "SLURM_TOPOLOGY_ADDR", "SLURM_CLUSTER_NAME", "SLURM_JOB_QOS"};

bool allowed(const std::string& name) {
  auto is = [&](const char* n) { return name == n; };
  auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes), starts) ||
         std::any_of(std::begin(kSlurmNames), std::end(kSlurmNames), is);
}

bool plain_name(const std::string& name) {
  return !name.empty() && name.size() <= kMaxEnvName &&
         std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string counted(const std::vector<std::pair<const char*, int>>& why) {
  std::string out;
  for (auto [what, n] : why)
    if (n) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  return out.empty() ? "none" : out;
}

}  // namespace

EnvCapture capture_environment(char** envp) {
  EnvCapture c;
  int outside = 0, odd_name = 0, secret_name = 0, secret_value = 0, cut = 0, over = 0;
  for (char** e = envp; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    std::string name(*e, static_cast<std::size_t>(eq - *e));
    if (!allowed(name)) { ++outside; continue; }
    if (!plain_name(name)) { ++odd_name; continue; }
    if (looks_secret(name)) { ++secret_name; continue; }
    // Only a bounded head is looked at or stored (a value may be megabytes).
    std::string_view full(eq + 1);
    std::string value(full.substr(0, kMaxEnvValue + 64));
    if (value_looks_secret(value)) { ++secret_value; continue; }
    if (full.size() > kMaxEnvValue) {
      value = value.substr(0, kMaxEnvValue) + fmt::format("...[{} bytes cut]", full.size() - kMaxEnvValue);
      ++cut;
    }
    if (c.vars.size() >= kMaxEnvVars) { ++over; continue; }
    // Control bytes or bytes that are not UTF-8: stored as bash's $'...'.
    if (shell_quote(value) .rfind("$'", 0) == 0) value = shell_quote(value);
    c.vars.emplace_back(std::move(name), std::move(value));
  }
  std::sort(c.vars.begin(), c.vars.end());
  c.left_out = counted({{"outside the allowlist", outside}, {"with a name not [A-Za-z0-9_]", odd_name},
                        {"named like a secret", secret_name}, {"with a value like a secret", secret_value},
                        {fmt::format("over the first {}", kMaxEnvVars).c_str(), over}});
  if (cut) c.left_out += fmt::format("; {} value(s) cut to their first {} bytes", cut, kMaxEnvValue);
  return c;
}

std::vector<std::pair<std::string, std::string>> captured_environment(char** envp) {
  return capture_environment(envp).vars;
}

}  // namespace gdr
