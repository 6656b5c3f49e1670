#include "options/numbers.h"

#include <fmt/format.h>

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

const NumberRule& number_rule(std::string_view name) {
  for (const NumberRule& r : number_rules())
    if (r.name == name) return r;
  throw std::logic_error(fmt::format("no number rule for {}", name));
}

double read_number_or(std::string_view text, std::string_view name, std::string_view word) {
  return read_rule(text, number_rule(name), word);
}

double read_number(std::string_view text, std::string_view name) { return read_number_or(text, name, {}); }

std::vector<std::string> number_table_rows() {
  std::vector<std::string> rows;
  for (const NumberRule& r : number_rules())
    rows.push_back(number_row("run", r));
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
