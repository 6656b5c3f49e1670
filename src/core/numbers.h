// The one reader of a number typed on a command line: a rule names the flag,
// its type (whole or any finite number), its range and why, and read_rule()
// turns text into the number or into one UsageError line naming the flag, the
// value and the range (exit 2). `run`'s rules are in src/options/numbers.h,
// doctor's beside its command; the docs table of every bound
// (docs/operators/numbers.md) is generated from them (`gdrbench generate-docs numbers`).
#pragma once

#include <string>
#include <string_view>

namespace gdr {

struct NumberRule {
  std::string_view name;  // the flag, "--window"
  bool whole;             // a whole number (else any finite number)
  double lo, hi;          // the range, ends included unless open_lo
  bool open_lo;           // lo itself is refused (a time of 0 s)
  std::string_view why;   // what the number is, and why its bounds
};

// Whether `v` is finite and inside the rule's range.
bool number_fits(const NumberRule& r, double v);
// "a whole number from 1 to 1000000", "a number above 0, at most 86400".
std::string range_text(const NumberRule& r);
// `text` as the rule's number; UsageError otherwise. `word` (auto, all): a word
// the caller also takes, named in the line.
double read_rule(std::string_view text, const NumberRule& r, std::string_view word = {});
// The docs table's row: "| `COMMAND FLAG` | type | range | why |".
std::string number_row(std::string_view command, const NumberRule& r);

}  // namespace gdr
