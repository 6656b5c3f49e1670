// gdrbench doctor: is this node ready for GPUDirect RDMA, and if not, why?
//
// collect_local() inspects the node it runs on (GPUs through NVML and the
// CUDA driver, both loaded at run time; RDMA devices through libibverbs, also
// loaded at run time; sysfs; hwloc) and returns one Report: a list of checks,
// each pass | warn | fail | n/a with the evidence it saw and the fix. It never
// needs a GPU, an RDMA device or MPI, and never throws for a missing piece:
// a missing piece is a check result.
//
// The JSON schema and the exit codes are documented in src/doctor/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}
namespace gdr {
class Bootstrap;
}

namespace gdr::doctor {

struct Check {
  std::string area;      // gpu | gpudirect | rdma | topology | versions
  std::string name;      // "driver", "gpu0", "mlx5_0 port 1", ...
  std::string status;    // pass | warn | fail | n/a
  std::string evidence;  // what was seen, one line
  std::string fix;       // what to do about a warn or fail (may be empty)
};

struct Report {
  std::string host;
  std::vector<Check> checks;
  std::string verdict;  // ready | degraded | not ready
  // What `validate` compares across hosts (inventory.cpp): configuration ("net/eth0/mtu" ->
  // "1500", "unknown" where unreadable) and error counters ("net/eth0/rx_dropped" -> 0).
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<std::pair<std::string, std::uint64_t>> counters;
};

// Exit statuses of `gdrbench doctor` (2 stays "bad input", as everywhere).
inline constexpr int kExitReady = 0;
inline constexpr int kExitDegraded = 3;
inline constexpr int kExitNotReady = 4;
// The doctor itself could not finish (MPI failed, --output not writable).
inline constexpr int kExitDoctorFailed = 1;

// Where collect_local looks. The defaults are the live machine; tests point
// the roots at fake trees and the topology at an XML file.
struct Options {
  std::string sys_root = "/sys";
  std::string proc_root = "/proc";
  std::string topology_xml;   // empty: the live topology through hwloc
  bool probe_libraries = true;  // false: do not dlopen NVML/CUDA/verbs/UCX/NCCL
  bool counters_only = false;   // read the error counters only (no checks, no config)
};

Report collect_local();
Report collect_local(const Options& options);

// Verdict from the checks: any fail -> "not ready", else any warn ->
// "degraded", else "ready".
std::string verdict_of(const std::vector<Check>& checks);
int exit_code(const Report& report);
// Worst exit code over several reports (0 for none).
int exit_code(const std::vector<Report>& reports);

// Human table. With more than one report, the first report of the majority is
// shown in full and every node that differs from the majority is listed with
// the differing checks.
std::string to_table(const std::vector<Report>& reports);
// JSON document (schema "gdrbench-doctor", version 1).
std::string to_json(const std::vector<Report>& reports);
// Parses a document written by to_json. Throws std::runtime_error.
std::vector<Report> from_json(const std::string& text);

// One report as bytes (compact JSON) for gathering over MPI, and back.
std::vector<std::byte> to_bytes(const Report& report);
Report from_bytes(std::span<const std::byte> bytes);  // throws std::runtime_error

// For every report, the checks in which it differs from the majority of the
// reports ("rdma/mlx5_0 port 1: fail (majority: pass)"). Empty lists when all
// agree or when there is a single report.
std::vector<std::vector<std::string>> differences(const std::vector<Report>& reports);

// Key/value pairs for result-file metadata: doctor.host, doctor.verdict, and
// doctor.<area>.<name> = "<status>: <evidence>" per check.
std::vector<std::pair<std::string, std::string>> flatten(const Report& report);
// The same for several hosts: doctor.verdict (the worst), doctor.hosts
// ("a,b"), then doctor.<host>.verdict and doctor.<host>.<area>.<name>.
std::vector<std::pair<std::string, std::string>> flatten(const std::vector<Report>& reports);

// Collective over the bootstrap's ranks: the first rank of every host runs
// collect_local(options); every rank returns all hosts' reports, one per
// host, in rank order.
std::vector<Report> gather(Bootstrap& boot, const Options& options = {});

// One line (no prefix, no newline) that `gdrbench run` prints before its
// table when this node is not ready for what the run asks, or "" when it is:
// "node01 is not ready for -m cuda --path direct over verbs: gpu/driver: ...;
// run `gdrbench doctor` for the fixes". The GPU checks weigh for every
// -m cuda --path direct run; the rest as `transport`'s rule says (none
// registered: only the GPU checks).
std::string readiness_warning(const Report& report, bool wants_cuda_direct,
                              const std::string& transport);

// How one check weighs for a run over a transport. Each transport's folder
// declares its own rule (GDR_REGISTER_READINESS), so the doctor names none.
enum class Weight {
  ignored,
  counts,  // fail: not ready; warn: degraded
  strict,  // warn too: not ready
  blocks,  // not ready, whatever its status
};
using ReadinessRule = Weight (*)(const Check& c, bool wants_cuda_direct);
struct ReadinessRegistrar {
  ReadinessRegistrar(const char* transport, ReadinessRule rule);
};
#define GDR_REGISTER_READINESS(var, transport, rule) \
  static ::gdr::doctor::ReadinessRegistrar var { transport, rule }

// Adds the `doctor` subcommand. Its callback sets `exit_code` to the worst
// verdict's exit status. Under mpirun/srun it gathers one report per host to
// rank 0, which prints.
CLI::App* add_command(CLI::App& app, int& exit_code);

}  // namespace gdr::doctor
