// Which GPU and HCA each rank used: /ranks/gpu and /ranks/hca of the HDF5
// file (results/README.md), so the link matrix can name both ends of a link.
#pragma once

#include <string>
#include <vector>

#include "core/bootstrap.h"
#include "memory/memory.h"
#include "record/results.h"
#include "transports/transport.h"

namespace gdr {

// This rank's GPU for a lane on `mem` ("0000:3B:00.0 NVIDIA H200"; "" for
// host memory or a build without CUDA). Its HCA is the transport's
// device().label() ("rxe0:1"; "" for transports that name none).
std::string rank_gpu(MemKind mem);

// Collective (every rank, after a transport connected): gathers each rank's
// values and adds them to meta.rank_gpus / rank_hcas, sized to the ranks;
// a value new to a rank is appended after ','. True when anything changed.
bool note_rank_devices(Bootstrap& boot, const std::string& gpu, const std::string& hca, RunMetadata& meta);

// Adds `value` to a ','-joined list unless empty or already there.
void add_to_list(std::string& list, const std::string& value);

}  // namespace gdr
