#include "numbers.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "errors.h"

namespace gdr {
namespace {

// 1048576 and 31536000 written out, 0.5 as 0.5.
std::string plain(double v) {
  return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
}

// The value, or NaN when the text is not a number of the rule's type (from_chars: no
// spaces, signs other than '-', hex or suffixes; "nan" and "inf" are read, then refused).
double parse(std::string_view t, const NumberRule& r) {
  if (r.whole) {
    long long w = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), w);
    return ec != std::errc() || end != t.data() + t.size() ? NAN : static_cast<double>(w);
  }
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec != std::errc() || end != t.data() + t.size() ? NAN : v;
}

}  // namespace

bool number_fits(const NumberRule& r, double v) {
  return std::isfinite(v) && (r.open_lo ? v > r.lo : v >= r.lo) && v <= r.hi;
}

std::string range_text(const NumberRule& r) {
  if (r.whole) return fmt::format("a whole number from {} to {}", plain(r.lo + (r.open_lo ? 1 : 0)), plain(r.hi));
  return fmt::format("a number {} {}, at most {}", r.open_lo ? "above" : "from", plain(r.lo), plain(r.hi));
}

double read_rule(std::string_view text, const NumberRule& r, std::string_view word) {
  const double v = parse(text, r);
  if (number_fits(r, v)) return v;
  std::string shown(text.substr(0, 40));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  throw UsageError(fmt::format("{} '{}': want {}{} ({})", r.name, shown, word.empty() ? "" : fmt::format("{} or ", word),
                               range_text(r), r.why));
}

std::string number_row(std::string_view command, const NumberRule& r) {
  return fmt::format("| `{} {}` | {} | {} | {} |", command, r.name, r.whole ? "whole number" : "number", range_text(r),
                     r.why);
}

}  // namespace gdr
