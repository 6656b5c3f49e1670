// The staging layer's settings: --stage-chunk and its environment twin, and
// GDR_STAGE_SLOTS (for measurements). One parser and one set of bounds for
// both: a chunk from one page (below it every message becomes thousands of
// pipelined copies) to 1 GiB (the pool is 2 x slots x chunk per peer).
#include "src/core/component_options.h"
#include "staged_transport.h"

namespace gdr {
namespace {

GDR_REGISTER_OPTIONS(reg_staged_options, declare_options<StagingConfig>(ComponentOptions::Owner::path, "staged", {
    {{"--stage-chunk", "GDR_STAGE_CHUNK", "staged path: bytes per pinned host chunk", "4M"},
     setting::size(&StagingConfig::chunk_bytes, 4096, std::size_t(1) << 30, "4K", "1G")},
    {{"", "GDR_STAGE_SLOTS", "staged path: pinned chunks in flight per peer and direction"},
     setting::whole(&StagingConfig::slots, 2, 1024)},
}));

}  // namespace
}  // namespace gdr
