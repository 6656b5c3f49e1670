#include "secrets.h"

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

bool value_looks_secret(std::string_view value) {
  const std::string v(value);
  static const std::regex patterns[] = {
      // scheme://user:password@host, and user:password@host without a scheme
      std::regex(R"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@)"),
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
  for (const std::regex& re : patterns)
    if (std::regex_search(v, re)) return true;
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
