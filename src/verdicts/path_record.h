// Per case: the path its bytes took and its ceiling (is it GPUDirect, and how close to the hardware), gathered from
// every rank of the case to rank 0 and written into the CaseRecord.
#pragma once

#include <map>
#include <string>

#include "core/bootstrap.h"
#include "core/ceiling.h"
#include "record/results.h"
#include "transports/transport.h"

namespace gdr {

// Copy rows measured so far in this run (rank 0): "copy-d2h" -> GB/s per size.
using CopyCeilings = std::map<std::size_t, std::map<std::string, double>>;

// Collective over all ranks, after the case ran: each rank asks its own
// transport (null for reference rows) for the path to the peer it talked
// to, and its own sysfs for the links' limits; rank 0 combines (the
// slowest rank's limit, any rank's host bounce) and fills rec's path and
// peak fields. `copies` is read on rank 0 only.
void record_path(Bootstrap& boot, Transport* t, CaseRecord& rec, const CopyCeilings& copies);

// Rank 0, after add(): a copy row's algbw becomes a ceiling for later rows.
void note_copy_row(const CaseRecord& rec, CopyCeilings& copies);

// What bounds a row's busbw when `limit` (the slowest stage of its path) bounds each direction:
// a bibw row moves both directions at once, so twice a duplex link's rate; but where the limit is
// a copy within one GPU's memory (the copy-d2d row) and the ranks share that GPU, both directions
// read and write the same memory and the copy's rate bounds them together. `why` gets the words
// the row's ceiling source adds, "" when none.
double busbw_bound(const CaseParams& c, const Ceiling& limit, bool one_device, std::string* why);

// Why a row reaches under half its ceiling, where that is known, else "unknown why"; "" from 50 %
// up. Rank 0 adds it to the row's peak_source and peak_why; the table notes each cause once.
std::string under_half_note(const CaseParams& c, double pct_peak);

// Below this size a row under half its ceiling is said to be bound by per-message cost.
inline constexpr std::size_t kPerMessageBound = 64 * 1024;

}  // namespace gdr
