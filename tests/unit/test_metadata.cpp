#include <gtest/gtest.h>

#include "outputs/metadata.h"
#include "outputs/redaction.h"
#include "src/core/shell_quote.h"

using namespace gdr;

TEST(Environment, KeepsPrefixesDropsSecrets) {
  std::vector<std::string> vars = {"UCX_TLS=rc,cuda_copy", "OMPI_COMM_WORLD_RANK=0",
                                   "NCCL_IB_HCA=mlx5_0",   "SLURM_JOB_ID=42",
                                   "HOME=/root",           "SLURM_AUTH_TOKEN=abc",
                                   "UCX_PASSWORD=x",       "CUDA_VISIBLE_DEVICES=0",
                                   "NCCL_SECRET_KEY=y",    "AWS_SECRET_ACCESS_KEY=z",
                                   "PATH=/bin"};
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  auto env = captured_environment(envp.data());
  std::vector<std::string> names;
  for (auto& [k, v] : env) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"CUDA_VISIBLE_DEVICES", "NCCL_IB_HCA",
                                             "OMPI_COMM_WORLD_RANK", "SLURM_JOB_ID", "UCX_TLS"}));
  EXPECT_EQ(env.back().second, "rc,cuda_copy");
}

TEST(Environment, SecretNames) {
  EXPECT_TRUE(looks_secret("MY_API_KEY"));
  EXPECT_TRUE(looks_secret("slurm_token"));
  EXPECT_FALSE(looks_secret("UCX_NET_DEVICES"));
}

TEST(CommandLine, QuotesSpaces) {
  std::string a0 = "gdrbench", a1 = "run", a2 = "--output", a3 = "my file.h5";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data()};
  EXPECT_EQ(join_command_line(4, argv), "gdrbench run --output 'my file.h5'");
}

TEST(Time, Formats) {
  EXPECT_EQ(utc_now().size(), 20u);
  EXPECT_EQ(utc_now(true).size(), 15u);
}

// Names with any bytes paste back into bash (checked by bash itself in
// tests/mpi/test_outputs.py --case names).
TEST(CommandLine, ShellQuote) {
  EXPECT_EQ(shell_quote("a/b-c_1.h5"), "a/b-c_1.h5");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("a\nb"), "$'a\\nb'");
  EXPECT_EQ(shell_quote("caf\xc3\xa9 x"), "'caf\xc3\xa9 x'");
  EXPECT_EQ(shell_quote("\xff'"), "$'\\xff\\''");
}

TEST(Environment, BoundedAndCounted) {
  std::vector<std::string> vars = {"UCX_BIG=" + std::string(100000, 'x'), "HOME=/root", "UCX_TLS=rc"};
  for (int i = 0; i < 600; ++i) vars.push_back("NCCL_V" + std::to_string(1000 + i) + "=1");
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  EnvCapture c = capture_environment(envp.data());
  EXPECT_EQ(c.vars.size(), kMaxEnvVars);
  EXPECT_NE(c.left_out.find("1 outside the allowlist"), std::string::npos) << c.left_out;
  EXPECT_NE(c.left_out.find("90 over the first 512"), std::string::npos) << c.left_out;
  EXPECT_NE(c.left_out.find("1 value(s) cut"), std::string::npos) << c.left_out;
}

// docs/analysts/output.md: a long value is cut to its first 2,048 B and marked; one whose head
// reads as a secret (a run of hex digits, 'A' included) is left out whole, and counted.
TEST(Environment, LongValuesCutOrLeftOutAsDocumented) {
  std::vector<std::string> vars = {"UCX_LONG=" + std::string(3000, 'x'), "GDR_HEX=" + std::string(3000, 'A')};
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  EnvCapture c = capture_environment(envp.data());
  ASSERT_EQ(c.vars.size(), 1u);
  EXPECT_EQ(c.vars[0].first, "UCX_LONG");
  EXPECT_EQ(c.vars[0].second, std::string(kMaxEnvValue, 'x') + "...[952 bytes cut]");
  EXPECT_NE(c.left_out.find("1 with a value like a secret"), std::string::npos) << c.left_out;
  EXPECT_NE(c.left_out.find("1 value(s) cut to their first 2048 bytes"), std::string::npos) << c.left_out;
}
