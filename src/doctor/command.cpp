// `gdrbench doctor`: the subcommand. Alone it checks this node; under
// mpirun/srun one rank per host checks its node and rank 0 prints every
// node's report.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <memory>
#include <set>

#include "core/numbers.h"
#include "core/bootstrap.h"
#include "doctor/doctor.h"
#include "core/errors.h"
#include "core/launcher.h"
#include "core/shell_quote.h"
#include "core/whole_file.h"

#include <sys/stat.h>

namespace gdr::doctor {

const NumberRule kTimeoutRule{"--timeout", false, 0, kMaxTimeoutSeconds, true,
                              "seconds to wait for the other ranks: a year at most, as run --timeout"};

namespace {

struct CommandOptions {
  bool json = false;
  bool local = false;
  bool force = false;
  std::string output;
  std::string timeout_text = "300";  // as typed: read by kTimeoutRule
  double timeout = 300;
  Options probe;
};

bool launched_by_mpi() { return launcher::present(); }

void emit(const CommandOptions& o, const std::vector<Report>& reports) {
  std::string text = o.json ? to_json(reports) : to_table(reports);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
    throw RunError(fmt::format("writing the report to stdout failed ({})", std::strerror(errno)));
  if (!o.output.empty()) {
    // Whole or not at all: validate and fleet scripts read this file while doctor may be killed.
    std::string why = write_whole(o.output, to_json(reports), "-o");
    if (!why.empty()) throw RunError(why);
  }
}

int run(const CommandOptions& o) {
  if (o.local || !launched_by_mpi()) {
    std::vector<Report> reports{collect_local(o.probe)};
    emit(o, reports);
    return exit_code(reports);
  }
  Bootstrap boot(nullptr, nullptr, o.timeout);
  std::vector<Report> reports = gather(boot, o.probe);
  if (boot.rank() == 0) emit(o, reports);
  return exit_code(reports);  // the same on every rank
}

}  // namespace

std::vector<Report> gather(Bootstrap& boot, const Options& options) {
  std::vector<std::byte> mine;
  if (boot.local_rank() == 0) {  // one report per host
    set_activity("doctor: collecting this node's report");
    Report r = collect_local(options);
    r.host = boot.host();
    mine = to_bytes(r);
  }
  set_activity("doctor: gathering the nodes' reports");
  auto blobs = boot.allgather(mine);
  std::vector<Report> reports;
  std::set<std::string> hosts;
  for (const auto& b : blobs) {
    if (b.empty()) continue;
    Report r = from_bytes(b);
    if (hosts.insert(r.host).second) reports.push_back(std::move(r));
  }
  return reports;
}

CLI::App* add_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "doctor",
      "Check GPUDirect RDMA readiness: GPUs, peer memory and dma-buf, RDMA devices, PCIe "
      "topology, library versions. Exit 0 ready, 3 degraded, 4 not ready. Under mpirun/srun, "
      "one report per node, gathered to rank 0.");
  sub->add_flag("--json", o->json, "Print the JSON document (schema: src/doctor/README.md)");
  sub->add_option("-o,--output", o->output, "Also write the JSON document to this file")->check(file_name_check);
  sub->add_flag("--force", o->force, "Overwrite the -o file if it exists");
  sub->add_flag("--counters", o->probe.counters_only,
                "Read only the NICs' and ports' error counters (fast; validate reads them before and after its run)");
  sub->add_flag("--local", o->local, "Check this node only, without MPI, even under mpirun/srun");
  sub->add_option("--timeout", o->timeout_text, "Seconds to wait for the other ranks under MPI")
      ->capture_default_str();
  // For tests and for reading a captured machine: not shown in --help.
  sub->add_option("--sysfs-root", o->probe.sys_root, "Read sysfs from here")->group("");
  sub->add_option("--procfs-root", o->probe.proc_root, "Read procfs from here")->group("");
  sub->add_option("--topology-xml", o->probe.topology_xml, "Read the topology from an hwloc XML file")
      ->group("");
  sub->add_flag_function("--no-libraries", [o](std::int64_t) { o->probe.probe_libraries = false; },
                "Do not load NVML, CUDA, libibverbs, UCX or NCCL")
      ->group("");
  sub->callback([o, &exit_code] {
    try {  // core/numbers.h: one line naming the flag, the value and the range
      o->timeout = read_rule(o->timeout_text, kTimeoutRule);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "gdrbench doctor: %s\n", e.what());
      exit_code = kExitUsage;
      return;
    }
    // An unwritable -o is bad input: say so before probing anything.
    if (!o->output.empty()) {
      std::filesystem::path dir = std::filesystem::path(o->output).parent_path();
      std::error_code ec;
      if (dir.empty()) dir = ".";
      if (!std::filesystem::is_directory(dir, ec) || access(dir.c_str(), W_OK) != 0) {
        std::fprintf(stderr, "gdrbench doctor: -o %s: folder %s does not exist or is not writable\n",
                     o->output.c_str(), dir.c_str());
        exit_code = kExitUsage;
        return;
      }
      // Never overwritten silently; never anything but a regular file (a FIFO blocks until a
      // reader comes; a device would be written into), nor a name with a control character
      // (docs/operators/outputs.md).
      struct stat st {};
      const char* why = nullptr;
      if (std::any_of(o->output.begin(), o->output.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
        why = "the name holds a control character; choose a name without one";
      else if (stat(o->output.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode))
          why = "not a regular file (a folder, FIFO, socket or device); give a file name";
        else if (!o->force)
          why = "file exists; pass --force to overwrite it";
      }
      if (why) {
        std::fprintf(stderr, "gdrbench doctor: -o %s: %s\n", shell_quote(o->output).c_str(), why);
        exit_code = kExitUsage;
        return;
      }
    }
    try {
      exit_code = run(*o);
    } catch (const std::exception& e) {  // MPI trouble, an unwritable --output
      std::fprintf(stderr, "gdrbench doctor: %s\n", e.what());
      exit_code = kExitDoctorFailed;
    }
  });
  return sub;
}

}  // namespace gdr::doctor
