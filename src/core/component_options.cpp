#include "component_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <tuple>

#include "sizes.h"

namespace gdr {

std::vector<ComponentOptions>& component_options() {
  static std::vector<ComponentOptions> r;
  return r;
}

ComponentOptionsRegistrar::ComponentOptionsRegistrar(ComponentOptions o) {
  component_options().push_back(std::move(o));
}

std::vector<const ComponentOptions*> sorted_component_options() {
  std::vector<const ComponentOptions*> v;
  for (const ComponentOptions& c : component_options()) v.push_back(&c);
  std::stable_sort(v.begin(), v.end(),
                   [](auto* a, auto* b) { return std::tie(a->kind, a->owner) < std::tie(b->kind, b->owner); });
  return v;
}

Settings resolve_settings(const FlagTexts& flags, const EnvLookup& env, std::string_view owner) {
  Settings s;
  for (const ComponentOptions* c : sorted_component_options())
    if (owner.empty() || c->owner == owner) c->resolve(flags, env, s);
  return s;
}

std::string setting_problem(const SettingSpec& s, bool from_flag, std::string_view text, std::string_view why) {
  // Quoted and cut: the value may hold anything, newlines included.
  std::string shown;
  for (char c : text.substr(0, 40)) shown += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  if (text.size() > 40) shown += "'...";
  else shown += "'";
  if (from_flag) return fmt::format("{} '{}: {}", s.flag, shown, why);
  return fmt::format("environment {}='{}: {} ({})", s.env, shown, why, s.help);
}

namespace setting {

bool parse_whole(std::string_view text, long long lo, long long hi, long long& out) {
  if (text.empty() || text.size() > 18) return false;
  long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

bool parse_number_above(std::string_view text, double lo, double hi, double& out) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || !(v > lo && v <= hi)) return false;
  out = v;
  return true;
}

std::string number_want(const char* what, double lo, double hi) {
  return fmt::format("want a {} above {:g}, at most {:g}", what, lo, hi);
}

std::string size_problem(std::string_view t, std::size_t lo, std::size_t hi, const char* lo_text,
                         const char* hi_text, std::size_t& out) {
  try {
    std::size_t n = parse_size(t, "the size");
    if (n < lo || n > hi) return fmt::format("want a size from {} to {}", lo_text, hi_text);
    out = n;
  } catch (const UsageError&) {
    return "want a size such as 512K or 4M (K, M, G are powers of 1024)";
  }
  return {};
}

}  // namespace setting
}  // namespace gdr
