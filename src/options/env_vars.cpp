#include "options/env_vars.h"

#include <cstdlib>

#include "core/component_options.h"

namespace gdr {

std::vector<EnvVar> env_vars() {
  std::vector<EnvVar> v;
  for (const ComponentOptions* c : sorted_component_options())
    for (const SettingSpec& s : c->specs)
      if (!s.env.empty()) v.push_back({s.env, s.help, s.flag});
  return v;
}

std::string env_value_problem(std::string_view name, std::string_view value) {
  for (const ComponentOptions* c : sorted_component_options())
    for (std::size_t i = 0; i < c->specs.size(); ++i)
      if (c->specs[i].env == name) {
        std::string why = c->check(i, value);
        return why.empty() ? why : setting_problem(c->specs[i], false, value, why);
      }
  return {};
}

std::string environment_problem() {
  for (const EnvVar& e : env_vars())
    if (const char* v = std::getenv(e.name.c_str()); v && *v)  // empty: as unset
      if (std::string why = env_value_problem(e.name, v); !why.empty()) return why;
  return {};
}

}  // namespace gdr
