// Every environment variable gdrbench reads is checked as strictly as an
// option (src/options/env_vars.h): good values pass, bad ones give one line naming
// the variable.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/core/component_options.h"
#include "options/env_vars.h"

using namespace gdr;

TEST(EnvVars, GoodValues) {
  for (auto [n, v] : {std::pair{"GDR_STAGE_CHUNK", "4M"}, {"GDR_STAGE_CHUNK", "4096"},
                      {"GDR_STAGE_SLOTS", "4"}, {"GDR_UCX_CUDA_MAX_SENDS", "0"},
                      {"GDR_VERBS_HCA", "mlx5_0"}, {"GDR_VERBS_HCA", "rxe0:1"},
                      {"GDR_VERBS_GID_INDEX", "3"}, {"GDR_VERBS_RETRY_CNT", "7"},
                      {"GDR_VERBS_QP_TIMEOUT", "14"}, {"GDR_SELFTEST_FAIL_RANK", "2"},
                      {"GDR_SELFTEST_CORRUPT", "1"}, {"GDR_ANALYSIS_DIR", "/"},
                      {"GDR_PYTHON", "python3"}, {"GDR_PYTHON", "/bin/sh"}, {"GDR_TIMER", "tsc"},
                      {"NOT_OURS", "anything"}})
    EXPECT_EQ(env_value_problem(n, v), "") << n << "=" << v;
}

TEST(EnvVars, BadValuesOneLine) {
  for (auto [n, v] : {std::pair{"GDR_STAGE_CHUNK", "abc"}, {"GDR_STAGE_CHUNK", "0"},
                      {"GDR_STAGE_CHUNK", "2G"}, {"GDR_STAGE_CHUNK", "-4M"},
                      {"GDR_STAGE_SLOTS", "1"}, {"GDR_STAGE_SLOTS", "four"}, {"GDR_TIMER", "rdtsc"}, {"GDR_STAGE_SLOTS", " 4"},
                      {"GDR_UCX_CUDA_MAX_SENDS", "-1"}, {"GDR_UCX_CUDA_MAX_SENDS", "1e3"},
                      {"GDR_VERBS_HCA", "mlx5_0:"}, {"GDR_VERBS_HCA", "mlx5 0"}, {"GDR_VERBS_HCA", ":1"},
                      {"GDR_VERBS_HCA", "mlx5_0:0"}, {"GDR_VERBS_GID_INDEX", "x"},
                      {"GDR_VERBS_RETRY_CNT", "8"}, {"GDR_VERBS_QP_TIMEOUT", "0"},
                      {"GDR_SELFTEST_FAIL_RANK", "-1"}, {"GDR_SELFTEST_CORRUPT", "yes"},
                      {"GDR_ANALYSIS_DIR", "/nonexistent-dir"}, {"GDR_PYTHON", "/nonexistent/python3"},
                      {"GDR_PYTHON", "/"},  // a folder passes access(X_OK): exec failed with 127
                      {"GDR_STAGE_SLOTS", "99999999999999999999999"}}) {
    std::string why = env_value_problem(n, v);
    EXPECT_NE(why.find(n), std::string::npos) << n << "=" << v << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  // Control characters in a value never reach the terminal.
  std::string why = env_value_problem("GDR_STAGE_SLOTS", "1\n\x1b[2J");
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_EQ(why.find('\x1b'), std::string::npos);
}

TEST(EnvVars, TableNamesAreUnique) {
  auto vars = env_vars();
  for (std::size_t i = 0; i < vars.size(); ++i)
    for (std::size_t j = i + 1; j < vars.size(); ++j) EXPECT_NE(vars[i].name, vars[j].name);
}

// One parser and one bound per setting: a flag and its environment twin take
// and refuse the same values (when each had its own parser, --stage-chunk 1
// was taken and GDR_STAGE_CHUNK=1 refused).
TEST(EnvVars, FlagAndTwinAgree) {
  const char* probes[] = {"0", "1", "2", "8", "9", "255", "256", "4095", "4K", "1G", "2G", "-1", "x", "imm",
                          "poll", "mlx5_0", "mlx5_0:1", "mlx5_0:0", ""};
  int pairs = 0;
  for (const ComponentOptions* c : sorted_component_options())
    for (const SettingSpec& s : c->specs) {
      if (s.flag.empty() || s.env.empty()) continue;
      ++pairs;
      for (const char* v : probes) {
        auto verdict = [&](bool flag) {
          auto env = [&](const char* name) -> const char* { return !flag && s.env == name ? v : nullptr; };
          try {
            resolve_settings(flag ? FlagTexts{{s.flag, v}} : FlagTexts{}, env, c->owner);
            return std::string("taken");
          } catch (const UsageError& e) {
            std::string why = std::string(e.what()).substr(std::string(e.what()).find(": "));
            if (!flag) why.erase(why.rfind(" (" + s.help + ")"));  // the variable's line says what it steers
            return why;
          }
        };
        if (*v) EXPECT_EQ(verdict(true), verdict(false)) << s.flag << " / " << s.env << " = '" << v << "'";
      }
    }
  EXPECT_GE(pairs, 1);
  EXPECT_NE(env_value_problem("GDR_STAGE_CHUNK", "1"), "");
  EXPECT_THROW(resolve_settings({{"--stage-chunk", "1"}}, [](const char*) -> const char* { return nullptr; }),
               UsageError);
}

// Nothing reads a gdrbench variable behind its declaration.
TEST(EnvVars, EveryVariableIsDeclared) {
  std::vector<std::string> names;
  for (const EnvVar& e : env_vars()) names.push_back(e.name);
  for (const char* n : {"GDR_STAGE_CHUNK", "GDR_STAGE_SLOTS", "GDR_TIMER", "GDR_WAIT_YIELD", "GDR_SELFTEST_CORRUPT",
                        "GDR_SELFTEST_FAIL_RANK", "GDR_ANALYSIS_DIR", "GDR_PYTHON"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}
