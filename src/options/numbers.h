// `gdrbench run`'s own numeric flags: each flag's type and range in one
// table, read by the one reader of src/core/numbers.h. The components' flags
// and their environment twins read theirs through the parsers of
// src/core/component_options.h (setting::whole, setting::size,
// setting::number_above); the docs table of every bound
// (docs/operators/numbers.md) is generated from both (`gdrbench generate-docs numbers`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/numbers.h"

namespace gdr {

const std::vector<NumberRule>& number_rules();
// The table's rule of the flag `name` (a logic error for a name not in it).
const NumberRule& number_rule(std::string_view name);
// `text` as the flag `name`'s number; UsageError otherwise.
double read_number(std::string_view text, std::string_view name);
// The same, where a word (auto, all) is also allowed: the caller handles it.
double read_number_or(std::string_view text, std::string_view name, std::string_view word);

// The rows of docs/operators/numbers.md's table for `run`: its flags from the
// table above, then every component setting whose parser reads a number (its
// own "want ..." line, asked of the parser itself).
std::vector<std::string> number_table_rows();

}  // namespace gdr
