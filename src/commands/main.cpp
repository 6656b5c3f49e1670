// gdrbench: one binary, subcommands. CLI11 parses; each subcommand lives in
// its own file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands/analysis_command.h"
#include "commands/commands.h"
#include "doctor/doctor.h"
#include "commands/generate_docs.h"
#include "core/errors.h"
#include "outputs/crash_sealer.h"
#include "commands/version.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

// What was printed on stdout (the table, list, --help) must have landed: a
// full disk or /dev/full under `> FILE` is one line on stderr and a
// non-zero status, never a silent exit 0 (docs/operators/outputs.md).
// A command that already failed has said why in its own line (doctor says
// its stdout failed itself): its status stands, nothing more is printed.
int stdout_checked(int code) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  if (code != 0) return code;
  const int err = errno;
  fmt::print(stderr, "gdrbench: writing to stdout failed ({}): what was printed there is lost\n",
             err ? std::strerror(err) : "a write error");
  return gdr::kExitRuntime;
}

}  // namespace

int main(int argc, char** argv) {
  // The result file's watcher (src/outputs/crash_sealer.h), started by rank 0 itself.
  if (argc > 1 && std::string_view(argv[1]) == "--seal-watch") return gdr::seal_watch_main(argc, argv);
  CLI::App app{"gdrbench: GPUDirect RDMA, UCX and host-staged communication benchmarks"};
  app.set_version_flag("--version", fmt::format("gdrbench {} ({})", gdr::kVersion, gdr::kGitCommit));
  app.require_subcommand(1);
  gdr::RunArgs run_args;
  CLI::App* run = app.add_subcommand("run", "run a benchmark sweep (launch with mpirun or srun)");
  gdr::add_run_options(*run, run_args);
  CLI::App* list =
      app.add_subcommand("list", "show the transports, memory kinds and tests built in, and usable");
  int exit_code = 0;
  gdr::doctor::add_command(app, exit_code);
  gdr::add_analysis_commands(app, exit_code);
  gdr::add_generate_docs_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return stdout_checked(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return stdout_checked(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return stdout_checked(app.exit(e));
  } catch (const CLI::ParseError& e) {
    // CLI11 calls an unknown first word "A subcommand is required": name it.
    if (dynamic_cast<const CLI::RequiredError*>(&e) && argc > 1 && app.get_subcommands().empty()) {
      gdr::usage_error_line(fmt::format("unknown {} '{}' (use run, list, doctor, compare, report, "
                                        "history, baseline, stragglers, suspects, export, validate or simulate; see gdrbench --help)",
                                        argv[1][0] == '-' ? "option" : "subcommand", argv[1]));
      return gdr::kExitUsage;
    }
    gdr::usage_error_line(fmt::format("{} (see gdrbench --help)", e.what()));
    return gdr::kExitUsage;
  }
  if (run->parsed()) return stdout_checked(gdr::run_command(run_args, argc, argv));
  if (list->parsed()) return stdout_checked(gdr::list_command());
  return stdout_checked(exit_code);  // doctor and the analysis commands ran as callbacks
}
