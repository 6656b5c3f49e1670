// libFuzzer target: the message-size parser (`-b 64K`, `-e 1G`, `--chunk`,
// `--stage-chunk`) and what the run does with its results.
// Property: parse_size either returns a positive count equal to the digits
// times the suffix, or throws UsageError; size_sweep of any two parsed sizes
// and a factor either throws UsageError or returns sizes in [min, max];
// nothing else (no other exception, no sanitizer report).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "src/core/errors.h"
#include "src/core/sizes.h"

namespace {
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_sizes: property violated: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Input: "<min>\n<max>\n<factor as 8 raw bytes>"; any part may be missing.
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nl = in.find('\n');
  std::string_view a = in.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
  auto nl2 = rest.find('\n');
  std::string_view b = rest.substr(0, nl2);
  std::string_view tail = nl2 == std::string_view::npos ? std::string_view{} : rest.substr(nl2 + 1);
  double factor = 2;
  if (tail.size() >= sizeof factor) std::memcpy(&factor, tail.data(), sizeof factor);

  std::size_t lo = 0, hi = 0;
  try {
    lo = gdr::parse_size(a, "--minbytes");
    check(lo > 0, "parse_size returned 0");
  } catch (const gdr::UsageError&) {
    return 0;
  }
  (void)gdr::human_bytes(lo);
  try {
    hi = gdr::parse_size(b, "--maxbytes");
  } catch (const gdr::UsageError&) {
    return 0;
  }
  try {
    auto sizes = gdr::size_sweep(lo, hi, factor);
    check(!sizes.empty(), "empty sweep");
    check(sizes.size() <= 64, "sweep longer than 64 sizes with factor >= 2");
    for (std::size_t s : sizes) check(s >= lo && s <= hi, "size outside [min, max]");
  } catch (const gdr::UsageError&) {
  }
  return 0;
}
