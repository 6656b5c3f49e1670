#include "shell_quote.h"

#include <fmt/format.h>

namespace gdr {
namespace {

bool plain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_@%+=:,./-").find(static_cast<char>(c)) != std::string_view::npos;
}

// Length of the valid UTF-8 sequence of two or more bytes at s[i], else 0.
std::size_t utf8_len(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || c > 0xf4 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string shell_quote(std::string_view s) {
  bool all_plain = !s.empty(), printable = true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    all_plain = all_plain && plain(c);
    if (c < 0x20 || c == 0x7f) printable = false;
    if (c >= 0x80) {
      std::size_t n = utf8_len(s, i);
      if (n == 0) printable = false;
      else i += n - 1;
    }
  }
  if (all_plain) return std::string(s);
  std::string out;
  if (printable) {
    out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  out = "$'";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\'' || c == '\\') out += fmt::format("\\{}", static_cast<char>(c));
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else if (c >= 0x80) {
      std::size_t n = utf8_len(s, i);
      if (n == 0) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

}  // namespace gdr
