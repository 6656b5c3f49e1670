// Options a registered component (a transport, a memory kind, the staging
// layer) declares for `gdrbench run`, as UCC's per-component config tables
// do: its own folder adds its flags bound to its own values, checks what was
// typed, and hands the values to its code before the run. Nothing outside
// the folder names them.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gdr {

class Bootstrap;

struct ComponentOptions {
  // What owns them; the help lists memory kinds' flags first, then the
  // transports', then the paths' (each group by owner name).
  enum class Owner { memory_kind, transport, path };
  Owner kind;
  std::string owner;  // "cuda", "verbs", "staged"
  // Adds the flags to `gdrbench run`, bound to the component's values, which
  // it resets to their defaults (a process may parse more than once: tests).
  std::function<void(CLI::App& run)> add;
  // After parsing, before MPI starts: throws UsageError naming the flag.
  std::function<void()> validate = {};
  // After MPI started, before any check or case; collective: every rank calls
  // every component's, in registration order.
  std::function<void(Bootstrap&)> apply = {};
};

std::vector<ComponentOptions>& component_options();
struct ComponentOptionsRegistrar {
  explicit ComponentOptionsRegistrar(ComponentOptions o);
};
#define GDR_REGISTER_OPTIONS(var, ...) \
  static ::gdr::ComponentOptionsRegistrar var { ::gdr::ComponentOptions{__VA_ARGS__} }

}  // namespace gdr
