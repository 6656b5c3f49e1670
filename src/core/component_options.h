// Settings a registered component (a transport, a memory kind, the staging
// layer, the program's own switches) declares, as UCC's per-component config
// tables do: each setting is a `gdrbench run` flag, its environment twin, or
// both, read by one parser with one set of bounds. The values reach the
// component as its own typed struct inside a Settings object that travels
// with the run (RunOptions -> make_transport -> TransportInfo::create,
// TestEnv), never through a global. The environment table of --help, the man
// page and the docs is generated from these declarations (src/options/env_vars.h).
#pragma once

#include <any>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "errors.h"

namespace gdr {

class Bootstrap;

// Every component's typed settings, each found by its type.
class Settings {
 public:
  // The component's settings; its defaults when they were never resolved
  // (a test that builds a transport by hand).
  template <class S>
  const S& get() const {
    auto it = by_type_.find(typeid(S));
    if (it == by_type_.end()) {
      static const S defaults{};
      return defaults;
    }
    return std::any_cast<const S&>(it->second);
  }
  template <class S>
  void put(S s) {
    by_type_[typeid(S)] = std::move(s);
  }

 private:
  std::unordered_map<std::type_index, std::any> by_type_;
};

// What one setting is called and says; no value.
struct SettingSpec {
  std::string flag;  // "--stage-chunk"; empty: environment only
  std::string env;   // "GDR_STAGE_CHUNK"; empty: flag only
  std::string help;  // one line: --help, the man page, the error line of a bad variable
  std::string default_text = {};  // shown as the flag's default in --help
  std::string type_name = "TEXT";  // the flag's value in --help and the man page ("INT")
};

// One setting of a component whose settings are the struct S.
template <class S>
struct Setting {
  SettingSpec spec;
  // Reads `text` into `into`: "" when good, else what a good value looks like
  // ("want a whole number from 0 to 7"), without the name.
  std::function<std::string(std::string_view text, S& into)> parse;
};

// The flags given on the command line: flag -> its last text.
using FlagTexts = std::map<std::string, std::string>;
// Looks a variable up (std::getenv, or a test's own table); null when unset.
using EnvLookup = std::function<const char*(const char*)>;

struct ComponentOptions {
  // What owns them; the help lists memory kinds' flags first, then the
  // transports', then the paths' (each group by owner name).
  enum class Owner { memory_kind, transport, path, program, analysis };
  Owner kind;
  std::string owner;  // "cuda", "verbs", "staged", "timer"
  std::vector<SettingSpec> specs;
  // "" when `text` is a good value of specs[i], else why not.
  std::function<std::string(std::size_t i, std::string_view text)> check;
  // Reads every spec, the environment's value first and a flag given over
  // it, into the typed struct kept in `out`. Throws UsageError naming the
  // flag or variable (setting_problem).
  std::function<void(const FlagTexts&, const EnvLookup&, Settings& out)> resolve;
  // After MPI started, before any check or case; collective: every rank calls
  // every component's, in registration order.
  std::function<void(const Settings&, Bootstrap&)> apply = {};
};

// The one line for a bad value: "--hca 'x:y': want ..." or
// "environment GDR_VERBS_HCA='x:y': want ... (help)"; the value is cut to 40
// characters and its control characters shown as '?'.
std::string setting_problem(const SettingSpec& s, bool from_flag, std::string_view text, std::string_view why);

// Builds the registry entry of a component whose settings are S. `apply`
// runs after MPI started (collective), with S resolved.
template <class S>
ComponentOptions declare_options(ComponentOptions::Owner kind, std::string owner, std::vector<Setting<S>> settings,
                                 std::function<void(const S&, Bootstrap&)> apply = {}) {
  ComponentOptions c{kind, std::move(owner), {}, {}, {}, {}};
  for (const Setting<S>& s : settings) c.specs.push_back(s.spec);
  c.check = [settings](std::size_t i, std::string_view text) {
    S scratch{};
    return settings.at(i).parse(text, scratch);
  };
  c.resolve = [settings](const FlagTexts& flags, const EnvLookup& env, Settings& out) {
    S s{};
    for (const Setting<S>& one : settings) {
      const char* e = one.spec.env.empty() ? nullptr : env(one.spec.env.c_str());
      if (e && *e)  // empty: as unset
        if (std::string why = one.parse(e, s); !why.empty()) throw UsageError(setting_problem(one.spec, false, e, why));
      auto f = one.spec.flag.empty() ? flags.end() : flags.find(one.spec.flag);
      if (f != flags.end())
        if (std::string why = one.parse(f->second, s); !why.empty())
          throw UsageError(setting_problem(one.spec, true, f->second, why));
    }
    out.put(std::move(s));
  };
  if (apply) c.apply = [apply](const Settings& all, Bootstrap& b) { apply(all.get<S>(), b); };
  return c;
}

std::vector<ComponentOptions>& component_options();
// Sorted by (kind, owner): one order for the help and the checks in every build.
std::vector<const ComponentOptions*> sorted_component_options();
// Every component's settings from `flags` and the environment (only `owner`'s
// when given). Throws UsageError for the first bad value.
Settings resolve_settings(const FlagTexts& flags, const EnvLookup& env, std::string_view owner = {});

struct ComponentOptionsRegistrar {
  explicit ComponentOptionsRegistrar(ComponentOptions o);
};
#define GDR_REGISTER_OPTIONS(var, ...) \
  static ::gdr::ComponentOptionsRegistrar var { __VA_ARGS__ }

// Parsers for the common shapes; `m` is the member of S they fill.
namespace setting {

// A whole number in [lo, hi] without sign, spaces or suffixes.
bool parse_whole(std::string_view text, long long lo, long long hi, long long& out);

template <class S, class M>
auto whole(M S::*m, long long lo, long long hi) {
  return [m, lo, hi](std::string_view t, S& s) -> std::string {
    long long v = 0;
    if (!parse_whole(t, lo, hi, v)) return "want a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
    s.*m = static_cast<int>(v);
    return {};
  };
}

// A finite number above lo, at most hi, as from_chars reads it (no spaces, hex or inf).
bool parse_number_above(std::string_view text, double lo, double hi, double& out);
// "want a percentage above 0, at most 1000".
std::string number_want(const char* what, double lo, double hi);

template <class S>
auto number_above(double S::*m, double lo, double hi, const char* what) {
  return [=](std::string_view t, S& s) -> std::string {
    double v = 0;
    if (!parse_number_above(t, lo, hi, v)) return number_want(what, lo, hi);
    s.*m = v;
    return {};
  };
}

// One of `values`, as typed.
template <class S>
auto one_of(std::string S::*m, std::vector<std::string> values) {
  return [m, values](std::string_view t, S& s) -> std::string {
    for (const std::string& v : values)
      if (t == v) {
        s.*m = v;
        return {};
      }
    std::string want = "want ";
    for (std::size_t i = 0; i < values.size(); ++i)
      want += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
    return want;
  };
}

// A size with K/M/G (powers of 1024) in [lo, hi]; `lo_text`/`hi_text` as users write them.
std::string size_problem(std::string_view t, std::size_t lo, std::size_t hi, const char* lo_text,
                         const char* hi_text, std::size_t& out);
template <class S>
auto size(std::size_t S::*m, std::size_t lo, std::size_t hi, const char* lo_text, const char* hi_text) {
  return [=](std::string_view t, S& s) -> std::string { return size_problem(t, lo, hi, lo_text, hi_text, s.*m); };
}

// A switch that is on when set: only "1" (unset or empty: off).
template <class S>
auto on(bool S::*m) {
  return [m](std::string_view t, S& s) -> std::string {
    if (t != "1") return "want 1 (or leave it unset)";
    s.*m = true;
    return {};
  };
}

}  // namespace setting
}  // namespace gdr
