// --stage-chunk, the staging layer's option: bytes per pinned host chunk.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

#include "src/core/sizes.h"
#include "src/core/component_options.h"
#include "staged_transport.h"

namespace gdr {
namespace {

std::string g_typed;               // as typed
std::size_t g_chunk = 4u << 20;    // parsed by validate()

GDR_REGISTER_OPTIONS(reg_staged_options, ::gdr::ComponentOptions::Owner::path, "staged",
    [](CLI::App& run) {
      // The flag beats GDR_STAGE_CHUNK, which beats the built-in 4M. A bad
      // variable is left to the start-up check (src/env_vars.cpp), which names it.
      const char* env = std::getenv("GDR_STAGE_CHUNK");
      g_typed = "4M";
      if (env && *env) try {
          parse_size(env, "GDR_STAGE_CHUNK");
          g_typed = env;
        } catch (const std::exception&) {
        }
      run.add_option("--stage-chunk", g_typed, "staged path: bytes per pinned host chunk")->capture_default_str();
    },
    [] { g_chunk = parse_size(g_typed, "--stage-chunk"); },
    // A run's chunk is the flag's, or its default (GDR_STAGE_CHUNK when set).
    [](Bootstrap&) { staging_config().chunk_bytes = g_chunk; });

}  // namespace
}  // namespace gdr
