// --stage-chunk, the staging layer's option: bytes per pinned host chunk.
#include <CLI/CLI.hpp>

#include <string>

#include "src/core/sizes.h"
#include "src/core/component_options.h"
#include "staged_transport.h"

namespace gdr {
namespace {

std::string g_typed;               // as typed
std::size_t g_chunk = 4u << 20;    // parsed by validate()
CLI::Option* g_flag = nullptr;

GDR_REGISTER_OPTIONS(reg_staged_options, ::gdr::ComponentOptions::Owner::path, "staged",
    [](CLI::App& run) {
      g_typed = "4M";
      g_flag = run.add_option("--stage-chunk", g_typed, "staged path: bytes per pinned host chunk")
                   ->capture_default_str();
    },
    [] { g_chunk = parse_size(g_typed, "--stage-chunk"); },
    // Only a flag given overrides: staging_config() already holds GDR_STAGE_CHUNK, else 4M.
    [](Bootstrap&) {
      if (g_flag && g_flag->count() > 0) staging_config().chunk_bytes = g_chunk;
    });

}  // namespace
}  // namespace gdr
