#include "options/numbers.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "core/component_options.h"
#include "core/errors.h"

namespace gdr {

const std::vector<NumberRule>& number_rules() {
  static const std::vector<NumberRule> rules = {
      {"--stepfactor", false, 2, 1 << 20, false, "size multiplier between cases; beyond 2^20 one size a sweep"},
      {"--iters", true, 1, 1e8, false, "timed iterations per case, or auto"},
      {"--warmup", true, 0, 1e8, false, "untimed iterations per case, or auto"},
      {"--case-time", false, 0, 86400, true, "seconds of timed work per case under --iters auto"},
      {"--budget", false, 0, 7 * 86400, true, "seconds of the whole sweep: up to a week"},
      {"--timeout", false, 0, kMaxTimeoutSeconds, true,
       "seconds of any one wait: a year at most, a steady_clock deadline overflows near 292 years"},
      {"--max-rounds", true, 1, 1e8, false, "rounds of the tournament, or all"},
      {"--window", true, 1, 1e6, false, "messages in flight per bw/bibw iteration"},
      {"--slots", true, 1, 1e8, false, "distinct buffers of a window, or auto; the buffers' room caps them"},
  };
  return rules;
}

namespace {
// 1048576 and 31536000 written out, 0.5 as 0.5.
std::string plain(double v) { return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v); }
}  // namespace

std::string range_text(const NumberRule& r) {
  if (r.whole) return fmt::format("a whole number from {} to {}", plain(r.lo + (r.open_lo ? 1 : 0)), plain(r.hi));
  return fmt::format("a number {} {}, at most {}", r.open_lo ? "above" : "from", plain(r.lo), plain(r.hi));
}

const NumberRule& number_rule(std::string_view name) {
  for (const NumberRule& r : number_rules())
    if (r.name == name) return r;
  throw std::logic_error(fmt::format("no number rule for {}", name));
}

bool number_fits(const NumberRule& r, double v) {
  return std::isfinite(v) && (r.open_lo ? v > r.lo : v >= r.lo) && v <= r.hi;
}

namespace {

// The value, or NaN when the text is not a number of the rule's type.
double parse(std::string_view t, const NumberRule& r) {
  double v = 0;
  if (r.whole) {
    long long w = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), w);
    if (ec != std::errc() || end != t.data() + t.size()) return NAN;
    return static_cast<double>(w);
  }
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return NAN;
  return v;
}

}  // namespace

double read_number_or(std::string_view text, std::string_view name, std::string_view word) {
  const NumberRule& r = number_rule(name);
  const double v = parse(text, r);
  if (!number_fits(r, v)) {
    std::string shown(text.substr(0, 40));
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    throw UsageError(fmt::format("{} '{}': want {}{} ({})", name, shown, word.empty() ? "" : fmt::format("{} or ", word),
                                 range_text(r), r.why));
  }
  return v;
}

double read_number(std::string_view text, std::string_view name) { return read_number_or(text, name, {}); }

std::vector<std::string> number_table_rows() {
  std::vector<std::string> rows;
  for (const NumberRule& r : number_rules())
    rows.push_back(fmt::format("| `run {}` | {} | {} | {} |", r.name, r.whole ? "whole number" : "number",
                               range_text(r), r.why));
  // A component's numbers: what its own parser says of a value that is no number.
  for (const ComponentOptions* c : sorted_component_options())
    for (std::size_t i = 0; i < c->specs.size(); ++i) {
      std::string want = c->check(i, "nan");
      const SettingSpec& s = c->specs[i];
      const char* kind = want.rfind("want a whole number", 0) == 0 ? "whole number"
                         : want.rfind("want a size", 0) == 0      ? "size"
                         : want.rfind("want a percentage", 0) == 0 ? "number"
                                                                   : nullptr;
      if (!kind) continue;
      if (std::string_view(kind) == "size") want = c->check(i, "1000T");  // its range, past the end
      std::string name = s.flag.empty() ? s.env : s.env.empty() ? "run " + s.flag : "run " + s.flag + "`, `" + s.env;
      rows.push_back(fmt::format("| `{}` | {} | {} | {} |", name, kind, want.substr(5), s.help));
    }
  return rows;
}

}  // namespace gdr
