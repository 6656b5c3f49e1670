// libFuzzer target: `gdrbench run` options, parsed by CLI11 exactly as
// main() sets them up, then validated (validate, validate_for_ranks) and
// turned into what the run builds from them (the --timeout deadline).
// Input: the argv after `gdrbench run`, arguments separated by NUL bytes
// (a real argv cannot hold NUL). Property: every argv ends in a parsed,
// validated RunOptions, a CLI::ParseError or a UsageError; nothing else.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "options/options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  std::vector<std::string> args{"gdrbench", "run"};
  std::string cur;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  if (!cur.empty()) args.push_back(cur);
  if (args.size() > 64) return 0;
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  CLI::App app{"gdrbench"};
  app.require_subcommand(1);
  gdr::RunArgs run_args;
  CLI::App* run = app.add_subcommand("run", "run");
  gdr::add_run_options(*run, run_args);
  try {
    app.parse(static_cast<int>(args.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return 0;  // CallForHelp and friends included: main() answers them
  }
  try {
    gdr::RunOptions o = gdr::validate(run_args);
    for (int ranks : {1, 2, 4}) {
      try {
        gdr::validate_for_ranks(o, ranks);
      } catch (const gdr::UsageError&) {
      }
    }
    gdr::Deadline d(o.timeout);  // every wait of the run builds one from --timeout
    (void)d.expired();
  } catch (const gdr::UsageError&) {
  }
  return 0;
}
