#include "outputs/redaction.h"

#include <cctype>
#include <regex>
#include <string>
#include <vector>

namespace gdr {
namespace {

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

bool starts(const std::string& w, const char* p) { return w.rfind(p, 0) == 0; }
bool ends(const std::string& w, std::string_view s) {
  return w.size() >= s.size() && w.compare(w.size() - s.size(), s.size(), s) == 0;
}

}  // namespace

bool looks_secret(std::string_view name) {
  const std::string u = upper(name);
  if (u.find("PRECONDITION_TRANSPORTS") != std::string::npos) return true;  // Open MPI's job key
  // Inside a word, too: APIKEY, SSHKEY, ACCESSTOKEN, DBPASSWORD.
  for (const char* part : {"TOKEN", "SECRET", "PASSW", "PASSPHRASE", "KEY", "CRED", "COOKIE", "PRIVATE",
                           "SIGNATURE", "BEARER", "HMAC", "MUNGE"})
    if (u.find(part) != std::string::npos) return true;
  // Whole words or their starts only: AUTH (AUTHORIZATION), CERT (CERTIFICATE);
  // short ones must be the whole word (PASS, but not BYPASS or PASSES).
  for (const std::string& w : words(u)) {
    if (starts(w, "AUTH") || starts(w, "CERT") || starts(w, "TICKET") || starts(w, "LOGIN"))
      return true;
    for (const char* whole : {"PASS", "PWD", "SALT", "NONCE", "JWT", "OTP", "PIN"})
      if (w == whole) return true;
    if (ends(w, "PWD")) return true;  // USERPWD (not ...PASS: BYPASS)
  }
  return false;
}

namespace {

// Parameters inside a longer value: "a=1&password=x", "--token=x",
// "--passwd x", "db:user=me;pwd=x", "-H Authorization:x": a key or flag that
// names a credential, followed by a value.
bool has_secret_parameter(std::string_view v) {
  std::vector<std::string> tokens(1);
  for (char c : v) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '&' || c == '?' || c == ';' || c == ',' || c == '"' ||
        c == '\'') {
      if (!tokens.back().empty()) tokens.emplace_back();
    } else {
      tokens.back() += c;
    }
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const std::size_t sep = t.find_first_of("=:");
    std::string key = t.substr(0, sep);
    const bool flag = key.rfind('-', 0) == 0;
    key.erase(0, key.find_first_not_of('-'));
    if (key.empty() || !looks_secret(key)) continue;
    if (sep != std::string::npos && sep + 1 < t.size()) return true;                 // key=value
    if (flag && sep == std::string::npos && i + 1 < tokens.size() && !tokens[i + 1].empty()) return true;  // --flag value
  }
  return false;
}

}  // namespace

bool value_looks_secret(std::string_view value) {
  const std::string v(value);
  if (has_secret_parameter(v)) return true;
  // A URL with a password, looked at around each "://" only: the pattern
  // costs time quadratic in a run of letters, and values may be long.
  static const std::regex url(R"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@)");
  int urls = 0;
  for (std::size_t at = v.find("://"); at != std::string::npos; at = v.find("://", at + 3)) {
    if (++urls > 16) return true;  // too many to look at: left out, as a secret would be
    const std::size_t from = at > 32 ? at - 32 : 0;
    if (v.find('@', at) != std::string::npos && std::regex_search(v.substr(from, 32 + 256), url)) return true;
  }
  static const std::regex patterns[] = {
      // user:password@host without a scheme
      std::regex(R"((^|[\s,;=])[^/\s:@,;=]+:[^/\s@,;=]+@[A-Za-z0-9.-]+)"),
      std::regex(R"((^|\s)(Bearer|Basic|Token|Digest)\s+\S{8,})", std::regex::icase),
      std::regex(R"(-----BEGIN )"),
      std::regex(R"((ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,})"),
      std::regex(R"(github_pat_[A-Za-z0-9_]{20,})"),
      std::regex(R"(glpat-[A-Za-z0-9_-]{16,})"),
      std::regex(R"(xox[abposr]-[A-Za-z0-9-]{10,})"),
      std::regex(R"((AKIA|ASIA)[A-Z0-9]{16})"),
      std::regex(R"(sk-[A-Za-z0-9_-]{20,})"),
      std::regex(R"(hf_[A-Za-z0-9]{20,})"),
      std::regex(R"(eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.)"),
  };
  // Each needs a character it matches literally: most values skip them all.
  static const char* const needs[] = {"@", "", "-----", "_", "github_pat_", "glpat-", "xox", "A", "sk-", "hf_", "eyJ"};
  for (std::size_t i = 0; i < std::size(patterns); ++i)
    if (v.find(needs[i]) != std::string::npos && std::regex_search(v, patterns[i])) return true;
  // GPU-/MIG- UUIDs name devices, not keys: blank them before the hex rule.
  static const std::regex uuid(
      R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})");
  const std::string rest = std::regex_replace(v, uuid, " ");
  // Runs of hex digits (dashes between them allowed, as in Open MPI's
  // "hex16-hex16" job key) holding 32 or more hex digits.
  int hex = 0;
  for (char c : rest) {
    if (std::isxdigit(static_cast<unsigned char>(c))) ++hex;
    else if (c != '-') hex = 0;
    if (hex >= 32) return true;
  }
  // A long run of letters and digits mixing upper, lower and digits.
  int len = 0;
  bool up = false, low = false, dig = false;
  for (std::size_t i = 0; i <= rest.size(); ++i) {
    unsigned char c = i < rest.size() ? rest[i] : ' ';
    if (std::isalnum(c) || c == '+' || c == '/' || c == '=') {
      ++len;
      up |= std::isupper(c) != 0;
      low |= std::islower(c) != 0;
      dig |= std::isdigit(c) != 0;
    } else {
      if (len >= 24 && up && low && dig) return true;
      len = 0;
      up = low = dig = false;
    }
  }
  return false;
}

}  // namespace gdr
