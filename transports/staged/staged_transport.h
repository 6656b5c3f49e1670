// The host-staged path: device data -> pinned host chunk -> any transport's
// host path -> pinned host chunk -> device, pipelined so that the copies of
// some chunks overlap the wire transfer of others.
#pragma once

#include <cstddef>
#include <memory>

#include "transports/transport.h"

namespace gdr {

// The staging layer's settings (staged_options.cpp declares them): make_transport's
// staging factory reads them from the run's Settings.
struct StagingConfig {
  // Bytes per staged chunk (--stage-chunk, GDR_STAGE_CHUNK).
  std::size_t chunk_bytes = 4u << 20;
  // Staging slots per peer and direction (GDR_STAGE_SLOTS): chunks in flight;
  // >= 2 so that a copy always overlaps a wire transfer. Memory = 2 x slots x
  // chunk per peer.
  int slots = 4;
};

// Wraps `inner` (which must move host memory) so it moves `mem` memory.
std::unique_ptr<Transport> make_staged_transport(std::unique_ptr<Transport> inner, Bootstrap& boot,
                                                 MemoryOps& mem, const StagingConfig& cfg);

}  // namespace gdr
