#include "outputs/redaction.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>
#include <stdexcept>
#include <vector>

namespace gdr {
namespace {

// results/gdranalysis/redaction_shapes.tsv, as CMake read it.
constexpr const char* kTable =
#include "redaction_shapes.inc"
    ;

struct Rule {
  std::string kind;
  std::regex rx;
  unsigned groups;
};
struct Table {
  std::vector<std::pair<std::string, std::string>> keys;  // (kind, word)
  std::vector<Rule> rules;
};

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

const Table& table() {
  static const Table t = [] {
    Table t;
    std::vector<std::string> header;
    for (const std::string& line : split(kTable, '\n')) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> cells = split(line, '\t');
      if (header.empty()) { header = cells; continue; }
      std::map<std::string, std::string> row;
      for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
      const std::string& kind = row["kind"];
      if (kind.rfind("key-", 0) == 0) {
        t.keys.emplace_back(kind, row["pattern"]);
        continue;
      }
      auto flags = std::regex::ECMAScript;
      if (row["flags"].find('i') != std::string::npos) flags |= std::regex::icase;
      std::regex rx(row["pattern"], flags);
      t.rules.push_back({kind, rx, static_cast<unsigned>(rx.mark_count())});
    }
    return t;
  }();
  return t;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

std::vector<std::string> words(const std::string& name) {
  std::vector<std::string> out(1);
  for (char c : name) {
    if (c == '_' || c == '-' || c == '.') {
      if (!out.back().empty()) out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

bool has(const std::string& s, int (*is)(int)) {
  return std::any_of(s.begin(), s.end(), [is](char c) { return is(static_cast<unsigned char>(c)) != 0; });
}
bool mixed(const std::string& s) { return has(s, std::isupper) && has(s, std::islower) && has(s, std::isdigit); }

double bits(const std::string& s) {
  std::map<char, int> n;
  for (char c : s) ++n[c];
  double h = 0;
  for (auto& [c, k] : n) h -= double(k) / s.size() * std::log2(double(k) / s.size());
  return h;
}

bool is_secret(const Rule& r, const std::smatch& m) {
  if (r.kind == "param") return looks_secret(m.str(2));
  if (r.kind == "shape") return true;
  const std::string cand = m.str(2);
  if (r.kind == "hex") {
    static const std::regex uuid(
        R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})");
    return std::count_if(cand.begin(), cand.end(), [](char c) { return c != '-'; }) >= 32 &&
           !std::regex_match(cand, uuid);
  }
  if (r.kind == "mixed") {  // a path's run: one of its /-parts of 12 or more mixes upper and lower case
    const std::vector<std::string> parts = split(cand, '/');
    return mixed(cand) && (parts.size() == 1 || std::any_of(parts.begin(), parts.end(), [](const std::string& x) {
                             return x.size() >= 12 && has(x, std::isupper) && has(x, std::islower);
                           }));
  }
  if (r.kind == "entropy") {
    std::string core = cand;
    while (!core.empty() && core.back() == '=') core.pop_back();
    return mixed(cand) && !core.empty() && bits(core) >= 3.0;
  }
  throw std::logic_error("redaction_shapes.tsv: unknown kind " + r.kind);
}

// Leftmost matches from `pos` on; a param whose key is not a credential is
// passed over up to its value only (the value may hold the next key=value).
std::string apply_rule(const Rule& r, const std::string& line) {
  std::string out;
  std::size_t at = 0, pos = 0;
  bool changed = false;
  while (pos <= line.size()) {
    std::smatch m;
    auto flags = pos ? std::regex_constants::match_prev_avail | std::regex_constants::match_not_bol
                     : std::regex_constants::match_default;
    if (!std::regex_search(line.begin() + static_cast<std::ptrdiff_t>(pos), line.end(), m, r.rx, flags)) break;
    const std::size_t start = pos + static_cast<std::size_t>(m.position(0));
    const std::size_t end = start + static_cast<std::size_t>(m.length(0));
    if (!is_secret(r, m)) {
      std::size_t next = end;
      if (r.kind == "param") next = pos + static_cast<std::size_t>(m.position(3) + m.length(3));
      pos = std::max(next, start + 1);
      continue;
    }
    pos = std::max(end, start + 1);
    std::string keep = r.kind == "param" ? m.str(1) + m.str(2) + m.str(3) : m.str(1);
    std::string after = r.kind != "param" && r.groups >= 3 ? m.str(3) : "";
    out += line.substr(at, start - at) + keep + std::string(kRedacted) + after;
    at = end;
    changed = true;
  }
  return changed ? out + line.substr(at) : line;
}

std::string redact_line(const std::string& line) {
  if (line.size() > kRedactMaxLine)
    return std::string(kRedacted) + " (a line of " + std::to_string(line.size()) + " bytes, over " +
           std::to_string(kRedactMaxLine) + ": not stored)";
  std::string s = line;
  for (const Rule& r : table().rules) s = apply_rule(r, s);
  return s;
}

}  // namespace

bool looks_secret(std::string_view name) {
  const std::string u = upper(name);
  const std::vector<std::string> ws = words(u);
  auto any = [&](auto pred) { return std::any_of(ws.begin(), ws.end(), pred); };
  for (const auto& key : table().keys) {
    const std::string& kind = key.first;  // not a structured binding: clang before 16 cannot capture one
    const std::string& word = key.second;
    if (kind == "key-part" && u.find(word) != std::string::npos) return true;
    if (kind == "key-start" && any([&](const std::string& w) { return w.rfind(word, 0) == 0; })) return true;
    if (kind == "key-word" && any([&](const std::string& w) { return w == word; })) return true;
    if (kind == "key-end" &&
        any([&](const std::string& w) { return w.size() >= word.size() && w.compare(w.size() - word.size(), word.size(), word) == 0; }))
      return true;
  }
  return false;
}

std::string redact(std::string_view text) {
  std::string out;
  bool first = true;
  for (const std::string& line : split(text, '\n')) {
    if (!first) out += '\n';
    first = false;
    out += redact_line(line);
  }
  return out;
}

bool value_looks_secret(std::string_view value) { return redact(value) != value; }

}  // namespace gdr
