#include "sizes.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "errors.h"

namespace gdr {

std::size_t parse_size(std::string_view text, std::string_view option) {
  auto bad = [&](std::string_view why) {
    return UsageError(fmt::format("{} '{}': {} (expected a positive byte count like 8, 64K, 1M, 2G)",
                                  option, text, why));
  };
  std::string_view digits = text;
  std::size_t mult = 1;
  if (!digits.empty()) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K': mult = 1ull << 10; break;
      case 'M': mult = 1ull << 20; break;
      case 'G': mult = 1ull << 30; break;
      case 'T': mult = 1ull << 40; break;
      case 'B': mult = 1; break;
      default: mult = 0; break;
    }
    if (mult != 0) digits.remove_suffix(1);
    else mult = 1;
  }
  if (digits.empty()) throw bad("not a number");
  if (digits.front() == '-') throw bad("must be positive");
  std::size_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) throw bad("too large");
  if (ec != std::errc() || end != digits.data() + digits.size()) throw bad("not a number");
  if (value == 0) throw bad("must be at least 1 byte");
  if (value > std::numeric_limits<std::size_t>::max() / mult) throw bad("too large");
  return value * mult;
}

std::vector<std::size_t> size_sweep(std::size_t min, std::size_t max, double factor) {
  if (min > max)
    throw UsageError(fmt::format("--minbytes ({}) is larger than --maxbytes ({})", min, max));
  if (!(factor >= 2.0) || !std::isfinite(factor))
    throw UsageError(fmt::format("--stepfactor {} must be a number >= 2", factor));
  // In double so that any factor works, but compared as integers: near 2^64
  // (double)max rounds up to 2^64, which does not convert back (undefined)
  // and is no size.
  std::vector<std::size_t> out{min};
  for (double s = static_cast<double>(min) * factor; s < 0x1p64; s *= factor) {
    auto v = static_cast<std::size_t>(s);
    if (v > max) break;
    if (v > out.back()) out.push_back(v);
  }
  return out;
}

std::string human_bytes(std::size_t b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4 && std::fmod(v, 1024) == 0) { v /= 1024; ++u; }
  return fmt::format("{:g} {}", v, units[u]);
}

std::string approx_bytes(std::size_t b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 5) { v /= 1024; ++u; }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace gdr
