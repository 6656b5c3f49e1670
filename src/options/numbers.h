// One reader of the numbers of `gdrbench run`'s own flags: each flag's type
// and range in one table, read by one function. A value that is not a number
// of the flag's type, not finite or out of range is one UsageError line
// naming the flag, the value and the range (exit 2). The components' flags
// and their environment twins read theirs through the parsers of
// src/core/component_options.h (setting::whole, setting::size); the docs
// table of every bound (docs/operators/numbers.md) is generated from both
// (`gdrbench generate-docs numbers`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gdr {

struct NumberRule {
  std::string_view name;  // the flag, "--window"
  bool whole;             // a whole number (else any finite number)
  double lo, hi;          // the range, ends included unless open_lo
  bool open_lo;           // lo itself is refused (a time of 0 s)
  std::string_view why;   // what the number is, and why its bounds
};

const std::vector<NumberRule>& number_rules();
// The table's rule of the flag `name` (a logic error for a name not in it).
const NumberRule& number_rule(std::string_view name);
// Whether `v` is finite and inside the rule's range.
bool number_fits(const NumberRule& r, double v);
// "a whole number from 1 to 1000000", "a number above 0, at most 86400".
std::string range_text(const NumberRule& r);
// `text` as the flag `name`'s number (a rule of the table); UsageError otherwise.
double read_number(std::string_view text, std::string_view name);
// The same, where a word (auto, all) is also allowed: the caller handles it.
double read_number_or(std::string_view text, std::string_view name, std::string_view word);

// The rows of docs/operators/numbers.md's table for the binary: run's flags
// from the table above, then every component setting whose parser reads a
// number (its own "want ..." line, asked of the parser itself).
std::vector<std::string> number_table_rows();

}  // namespace gdr
