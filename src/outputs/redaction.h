// The one redaction of every string gdrbench stores or prints: the command
// line, the environment, HDF5 attributes, JSON Lines, the table's notes and
// error lines. What it removes is one table, results/gdranalysis/redaction_shapes.tsv,
// compiled in here by CMake and read by the Python analysis
// (results/gdranalysis/redaction.py), which applies it the same way; every row
// has a case in tests/unit/redaction_cases.tsv that both sides must pass.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gdr {

// The marker that replaces each secret.
inline constexpr std::string_view kRedacted = "REDACTED";
// A line longer than this is not looked at: it is replaced whole, as a secret
// would be (the regex engine recurses once per character matched).
inline constexpr std::size_t kRedactMaxLine = 4096;

// A name that names a credential (the table's key-* rows: TOKEN, PASSW, KEY,
// AUTH*, whole words PASS, PIN, SIG, ...): environment names, keys of
// key=value, flags.
bool looks_secret(std::string_view name);

// `text` with every secret the table's other rows find replaced by REDACTED,
// line by line, row by row in the table's order.
std::string redact(std::string_view text);

// A value redact() would change.
bool value_looks_secret(std::string_view value);

}  // namespace gdr
