// libFuzzer target: the small parsers of text that comes from outside the
// program: `--hca DEV[:PORT]` (verbs), PCI bus ids as drivers, NVML and
// sysfs spell them (doctor), and PCI config-space images (doctor's ACS
// check). Property: parse_hca returns a device and port >= 0 or throws
// UsageError; normalize_busid returns "" or a canonical "dddd:bb:dd.f"
// that normalizes to itself; parse_acs never reads out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "src/doctor/facts.h"
#include "src/core/errors.h"
#ifdef GDR_HAVE_VERBS
#include "transports/verbs/verbs_logic.h"
#endif

namespace {
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_text: property violated: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the parser, the rest is its input.
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
#ifdef GDR_HAVE_VERBS
      try {
        auto h = gdr::verbs::parse_hca(text);
        check(!h.device.empty() && h.port >= 0, "parse_hca: empty device or negative port");
      } catch (const gdr::UsageError&) {
      }
#endif
      break;
    }
    case 1: {
      std::string id = gdr::doctor::detail::normalize_busid(text);
      if (!id.empty()) {
        check(id.size() == 12, "normalize_busid: not dddd:bb:dd.f");
        check(gdr::doctor::detail::normalize_busid(id) == id, "normalize_busid: not idempotent");
      }
      break;
    }
    case 2: {
      auto a = gdr::doctor::detail::parse_acs("0000:00:00.0", text);
      check(!a.present || a.readable, "parse_acs: present but not readable");
      break;
    }
  }
  return 0;
}
