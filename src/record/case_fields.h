// The fields of a case, listed once: the HDF5 attributes, the JSON Lines
// keys and the table's cells are all read from this list (results/README.md
// is the schema it writes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "record/results.h"

namespace gdr {

// The dtype and op of a row that moves bytes (point-to-point tests): part of
// the on-disk schema ("byte", "none"), so spelled here and nowhere else.
inline constexpr const char* kNoDtypeLabel = "byte";
inline constexpr const char* kNoOpLabel = "none";
std::string dtype_label(const CaseParams& c);  // dtype_name() or kNoDtypeLabel
std::string op_label(const CaseParams& c);     // op_name() or kNoOpLabel

// A field's value for one row. Omit: the field says nothing about this row,
// so no sink writes it. Unknown: every sink keeps the key (JSON null, table
// "-"), the HDF5 file leaves the attribute out (a NaN never equals itself).
struct Omit {};
struct Unknown {};
using Flows = std::vector<std::pair<int, int>>;
using FieldValue = std::variant<Omit, Unknown, bool, std::int64_t, double, std::string, Flows>;

enum FieldSink : unsigned { kHdf5 = 1, kJsonl = 2, kBoth = 3 };

struct CaseField {
  const char* key;
  unsigned sinks;  // FieldSink bits
  FieldValue (*get)(const CaseRecord&);
  // Where the JSON Lines row says it differently (src/dst: null for
  // collectives, left out on pattern rows); null: as get.
  FieldValue (*json)(const CaseRecord&) = nullptr;
};

// In the order the JSON Lines rows and the HDF5 attributes are written.
const std::vector<CaseField>& case_fields();
const CaseField& case_field(std::string_view key);  // throws std::logic_error if not listed

// The value `sink` (one FieldSink bit) writes for `f`.
FieldValue field_value(const CaseField& f, const CaseRecord& r, FieldSink sink);

}  // namespace gdr
