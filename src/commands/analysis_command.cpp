#include "commands/analysis_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/component_options.h"
#include "core/shell_quote.h"
#include "core/errors.h"

namespace gdr {
namespace {

namespace fs = std::filesystem;

struct AnalysisSub {
  const char* name;
  const char* description;
};

constexpr AnalysisSub kSubs[] = {
    {"compare", "compare two result files case by case (exit 1 on a regression); see --help"},
    {"stragglers", "per case, the ranks and hosts slower than the median rank; see --help"},
    {"report", "self-contained HTML report with plots (--html OUT.html); see --help"},
    {"history", "trend of one case across archived result files (--case ...); see --help"},
    {"baseline", "each link, GPU and host against its own past runs: change points (exit 1 if any); see --help"},
    {"suspects", "the links, ranks and hosts that are outliers (exit 1 if any); see --help"},
    {"export", "a run as Prometheus metrics (--openmetrics RUN.h5 [-o FILE.prom]); see --help"},
    {"validate", "acceptance run of a cluster: doctor, patterns, a verdict per host (exit 1/4); see --help"},
    {"simulate", "validate's error rates on simulated fleets, noise fitted to real runs; see --help"},
};

// The analysis commands' environment (they take no `run` flags).
struct AnalysisSettings {
  std::string dir;                       // GDR_ANALYSIS_DIR; empty: found beside the executable
  std::string python = "/usr/bin/python3";  // GDR_PYTHON
};

std::string parse_folder(std::string_view v, AnalysisSettings& s) {
  std::error_code ec;
  if (!fs::is_directory(std::string(v), ec)) return "want an existing folder";
  s.dir = std::string(v);
  return {};
}

std::string parse_program(std::string_view v, AnalysisSettings& s) {
  std::string p(v);
  // Without a '/', found through PATH when run.
  // A folder passes access(X_OK) too: it is searched, not run (exec fails with 127).
  std::error_code ec;
  if (p.find('/') != std::string::npos && (access(p.c_str(), X_OK) != 0 || fs::is_directory(p, ec)))
    return "want an executable python3 (a program file, not a folder)";
  s.python = p;
  return {};
}

GDR_REGISTER_OPTIONS(reg_analysis_options, declare_options<AnalysisSettings>(ComponentOptions::Owner::analysis, "analysis", {
    {{"", "GDR_ANALYSIS_DIR", "analysis: the folder that holds gdranalysis/"}, parse_folder},
    {{"", "GDR_PYTHON", "analysis: the python3 to run it with"}, parse_program},
}));

bool has_package(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "gdranalysis" / "__main__.py", ec);
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace

// Found next to the executable, never through a compiled-in source path, so an
// installed tree (or a copy of it) works anywhere: PREFIX/bin/gdrbench looks in
// PREFIX/share/gdrbench; the build tree's binary in BUILD/share/gdrbench, a
// link to the source's results/ that CMake makes (cmake/GdrInstall.cmake).
constexpr const char* kPackageDirs[] = {"../share/gdrbench", "share/gdrbench"};

std::string analysis_package_dir(const std::string& named) {
  if (!named.empty()) return has_package(named) ? named : "";  // a folder named on purpose: never another one instead
  fs::path exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    for (const char* rel : kPackageDirs) {
      std::error_code ec;
      fs::path p = fs::weakly_canonical(exe_dir / rel, ec);
      if (!ec && has_package(p)) return p.string();
    }
  }
  return {};
}

namespace {

// The folder that holds the analysis package, into `dir`; else its line printed and the exit status.
int find_package(const std::string& subcommand, const AnalysisSettings& env, std::string& dir) {
  dir = analysis_package_dir(env.dir);
  if (!env.dir.empty() && dir.empty()) {
    fmt::print(stderr, "gdrbench {}: environment GDR_ANALYSIS_DIR={}: holds no gdranalysis/__main__.py "
               "(want the folder that holds gdranalysis/, such as results/ or PREFIX/share/gdrbench)\n",
               subcommand, shell_quote(env.dir));
    return kExitUsage;
  }
  if (dir.empty()) {
    fmt::print(stderr,
               "gdrbench {}: cannot find the analysis package gdranalysis (looked in $GDR_ANALYSIS_DIR, "
               "then {}/../share/gdrbench and {}/share/gdrbench); "
               "set GDR_ANALYSIS_DIR to the folder that holds gdranalysis/\n",
               subcommand, executable_dir().string(), executable_dir().string());
    return 3;
  }
  return 0;
}

// In the child: its signals back, the package on PYTHONPATH, the status pipe inherited; never returns.
[[noreturn]] void exec_analysis(std::vector<char*>& argv, const std::string& pythonpath, int report_fd,
                                const struct sigaction& old_int, const struct sigaction& old_quit,
                                const std::string& subcommand, const std::string& python) {
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  setenv("PYTHONPATH", pythonpath.c_str(), 1);
  int fd = dup(report_fd);  // without O_CLOEXEC: the analysis inherits it
  setenv("GDR_ANALYSIS_STATUS_FD", std::to_string(fd).c_str(), 1);
  // validate launches this very binary on every host
  std::error_code ec;
  if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) setenv("GDR_GDRBENCH", exe.c_str(), 1);
  execvp(argv[0], argv.data());
  fmt::print(stderr, "gdrbench {}: cannot run {}: {} (set GDR_PYTHON to a python3 with h5py, "
             "numpy, scipy and matplotlib)\n", subcommand, python, std::strerror(errno));
  _exit(127);
}

// The child's exit status as a shell gives it (128 + signal), 127 when it cannot be known.
int wait_status(pid_t pid) {
  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  if (w < 0) return 127;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

}  // namespace

int run_analysis(const std::string& subcommand, const std::vector<std::string>& args) {
  AnalysisSettings env;
  try {
    env = resolve_settings({}, std::getenv, "analysis").get<AnalysisSettings>();
  } catch (const UsageError& e) {
    fmt::print(stderr, "gdrbench {}: {}\n", subcommand, e.what());
    return kExitUsage;
  }
  const std::string& python = env.python;
  std::string dir;
  if (int code = find_package(subcommand, env, dir)) return code;
  std::string pythonpath = dir;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;

  std::vector<std::string> argv_s = {python, "-m", "gdranalysis", subcommand};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The analysis reports its own exit status through this pipe: a GDR_PYTHON
  // that is not python3 (/bin/true) exits 0 without running anything, which
  // must never read as "no regression".
  int report[2];
  if (pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
    fmt::print(stderr, "gdrbench {}: pipe failed: {}\n", subcommand, std::strerror(errno));
    return kExitRuntime;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // Like system(): the child gets Ctrl-C, the parent waits for its status.
  struct sigaction ignore {}, old_int {}, old_quit {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  pid_t pid = fork();
  if (pid == 0) exec_analysis(argv, pythonpath, report[1], old_int, old_quit, subcommand, python);
  int rc = 127;
  if (pid < 0) fmt::print(stderr, "gdrbench {}: fork failed: {}\n", subcommand, std::strerror(errno));
  else rc = wait_status(pid);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  close(report[1]);
  char got[16] = {};
  ssize_t n = pid > 0 ? read(report[0], got, sizeof got - 1) : 0;  // the child is gone: never blocks
  close(report[0]);
  if (pid > 0 && n <= 0 && (rc == 0 || rc == 1)) {  // what would read as a verdict
    fmt::print(stderr, "gdrbench {}: {} exited {} without running the analysis (GDR_PYTHON must be a "
               "python3 with h5py, numpy, scipy and matplotlib)\n", subcommand, shell_quote(python), rc);
    return kExitUsage;
  }
  return rc;
}

CLI::App* add_analysis_commands(CLI::App& app, int& exit_code) {
  exit_code = -1;
  CLI::App* last = nullptr;
  for (const AnalysisSub& s : kSubs) {
    CLI::App* sub = app.add_subcommand(s.name, s.description);
    sub->group("Analysis (Python, results/gdranalysis)");
    sub->set_help_flag();   // --help goes to the Python side, which knows the options
    sub->allow_extras();    // unknown options are kept, in order, for Python
    sub->prefix_command();  // everything from the first positional on, too
    std::string name = s.name;
    sub->callback([sub, name, &exit_code] { exit_code = run_analysis(name, sub->remaining()); });
    last = sub;
  }
  return last;
}

}  // namespace gdr
