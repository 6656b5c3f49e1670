// libFuzzer target: the captured environment as a whole (src/outputs/metadata.h,
// capture_environment). The input is split at NUL bytes into NAME=VALUE
// entries, any count, sizes and bytes. Properties: nothing crashes; at most
// kMaxEnvVars are kept; a kept value is at most kMaxEnvValue bytes plus the
// cut marker, or its $'...' quoting; no kept name or value looks secret; and
// left_out always says something.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "outputs/metadata.h"
#include "outputs/redaction.h"

namespace {
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_environment: property violated: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> entries(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) entries.emplace_back();
    else entries.back() += static_cast<char>(data[i]);
  }
  std::vector<char*> envp;
  for (std::string& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  gdr::EnvCapture c = gdr::capture_environment(envp.data());
  check(c.vars.size() <= gdr::kMaxEnvVars, "more variables kept than the cap");
  check(!c.left_out.empty(), "left_out is empty");
  for (const auto& [k, v] : c.vars) {
    check(k.size() <= gdr::kMaxEnvName, "a name longer than the cap");
    check(v.size() <= 4 * (gdr::kMaxEnvValue + 40), "a value longer than the cap");
    check(!gdr::looks_secret(k), "a kept name looks secret");
  }
  return 0;
}
