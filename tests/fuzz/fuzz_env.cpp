// libFuzzer target: the parsers of every environment variable gdrbench reads
// (src/options/env_vars.h: bad input is one clear line). The first byte picks the variable, the rest is
// its value. Property: env_value_problem returns "" (a good value) or one
// line that names the variable and holds no control character (the value
// may hold anything; the line reaches a terminal).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "options/env_vars.h"

namespace {
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_env: property violated: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  auto vars = gdr::env_vars();
  const gdr::EnvVar& var = vars[data[0] % vars.size()];
  std::string_view value(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string why = gdr::env_value_problem(var.name, value);
  if (why.empty()) return 0;
  check(why.find(var.name) != std::string::npos, "the line does not name the variable");
  for (char c : why) check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "control character in the line");
  check(why.size() < 400, "line longer than 400 characters");
  return 0;
}
