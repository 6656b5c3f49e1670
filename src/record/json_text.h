// JSON text for the two writers of JSON Lines (--json rows, live verdicts),
// by hand: one object per line, and the numbers must read back bit-exact.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace gdr {

// Shortest text that reads back as the same double: the JSON numbers equal
// the HDF5 attributes exactly. NaN and infinities: null.
inline std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

// A JSON string: quotes, backslashes and control characters escaped.
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') out += fmt::format("\\{}", static_cast<char>(ch));
    else if (ch < 0x20) out += fmt::format("\\u{:04x}", ch);
    else out += static_cast<char>(ch);
  }
  return out + "\"";
}

}  // namespace gdr
