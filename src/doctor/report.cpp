// Reports as data: JSON (the documented schema), bytes for gathering, key/
// value pairs for result metadata, majority comparison across nodes, and the
// one-line warning `gdrbench run` prints.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "doctor/doctor.h"

namespace gdr::doctor {

// Keys keep the order written here (schema, version, verdict, ... first).
using json = nlohmann::ordered_json;

inline constexpr const char* kSchema = "gdrbench-doctor";
inline constexpr int kSchemaVersion = 1;

static json check_json(const Check& c) {
  return {{"area", c.area}, {"name", c.name}, {"status", c.status},
          {"evidence", c.evidence}, {"fix", c.fix}};
}

static json report_json(const Report& r) {
  json checks = json::array();
  for (const auto& c : r.checks) checks.push_back(check_json(c));
  json config = json::object(), counters = json::object();
  for (const auto& [k, v] : r.config) config[k] = v;
  for (const auto& [k, v] : r.counters) counters[k] = v;
  return {{"host", r.host}, {"verdict", r.verdict}, {"exit_code", exit_code(r)}, {"checks", checks},
          {"config", config}, {"counters", counters}};
}

static Report report_from(const json& j) {
  static const char* statuses[] = {"pass", "warn", "fail", "n/a"};
  Report r;
  r.host = j.at("host").get<std::string>();
  r.verdict = j.at("verdict").get<std::string>();
  if (r.verdict != "ready" && r.verdict != "degraded" && r.verdict != "not ready")
    throw std::runtime_error("doctor report: bad verdict '" + r.verdict + "'");
  for (const auto& c : j.at("checks")) {
    Check k{c.at("area").get<std::string>(), c.at("name").get<std::string>(),
            c.at("status").get<std::string>(), c.value("evidence", ""), c.value("fix", "")};
    if (std::find(std::begin(statuses), std::end(statuses), k.status) == std::end(statuses))
      throw std::runtime_error("doctor report: bad status '" + k.status + "'");
    r.checks.push_back(std::move(k));
  }
  // Optional: documents written before the inventory have neither.
  if (j.contains("config"))
    for (const auto& [k, v] : j.at("config").items()) r.config.emplace_back(k, v.get<std::string>());
  if (j.contains("counters"))
    for (const auto& [k, v] : j.at("counters").items()) r.counters.emplace_back(k, v.get<std::uint64_t>());
  return r;
}

std::string to_json(const std::vector<Report>& reports) {
  json doc;
  doc["schema"] = kSchema;
  doc["version"] = kSchemaVersion;
  int code = exit_code(reports);
  doc["verdict"] = reports.empty() ? "not ready"
                   : code == kExitReady ? "ready"
                   : code == kExitDegraded ? "degraded"
                                           : "not ready";
  doc["exit_code"] = reports.empty() ? kExitNotReady : code;
  auto diffs = differences(reports);
  json arr = json::array();
  for (size_t i = 0; i < reports.size(); ++i) {
    json r = report_json(reports[i]);
    r["differs_from_majority"] = diffs[i];
    arr.push_back(std::move(r));
  }
  doc["reports"] = std::move(arr);
  return doc.dump(2) + "\n";
}

std::vector<Report> from_json(const std::string& text) {
  try {
    json doc = json::parse(text);
    if (doc.value("schema", "") != kSchema)
      throw std::runtime_error("not a gdrbench-doctor document");
    if (doc.value("version", 0) != kSchemaVersion)
      throw std::runtime_error(fmt::format("unsupported gdrbench-doctor version {}",
                                           doc.value("version", 0)));
    std::vector<Report> out;
    for (const auto& r : doc.at("reports")) out.push_back(report_from(r));
    return out;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("doctor JSON: ") + e.what());
  }
}

std::vector<std::byte> to_bytes(const Report& report) {
  std::string s = report_json(report).dump();
  std::vector<std::byte> out(s.size());
  std::transform(s.begin(), s.end(), out.begin(), [](char c) { return static_cast<std::byte>(c); });
  return out;
}

Report from_bytes(std::span<const std::byte> bytes) {
  std::string s(bytes.size(), '\0');
  std::transform(bytes.begin(), bytes.end(), s.begin(), [](std::byte b) { return static_cast<char>(b); });
  try {
    return report_from(json::parse(s));
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("doctor report bytes: ") + e.what());
  }
}

// What is compared across nodes: the status of every check, and the evidence
// of the checks that should read the same everywhere (library and driver
// versions). Evidence elsewhere names host-specific things (addresses, GIDs).
static std::string compared_value(const Check& c) {
  bool same_text = c.area == "versions" || (c.area == "gpu" && (c.name == "driver" || c.name == "cuda"));
  return same_text ? c.status + ": " + c.evidence : c.status;
}

std::vector<std::vector<std::string>> differences(const std::vector<Report>& reports) {
  std::vector<std::vector<std::string>> out(reports.size());
  if (reports.size() < 2) return out;
  const std::string absent = "absent";
  std::vector<std::string> keys;  // in order of first appearance
  std::vector<std::map<std::string, std::string>> values(reports.size());
  for (size_t i = 0; i < reports.size(); ++i)
    for (const auto& c : reports[i].checks) {
      std::string key = c.area + "/" + c.name;
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
      values[i][key] = compared_value(c);
    }
  for (const auto& key : keys) {
    std::vector<std::pair<std::string, int>> counts;  // value, count; first seen first
    std::vector<std::string> v(reports.size());
    for (size_t i = 0; i < reports.size(); ++i) {
      auto it = values[i].find(key);
      v[i] = it == values[i].end() ? absent : it->second;
      auto c = std::find_if(counts.begin(), counts.end(), [&](auto& p) { return p.first == v[i]; });
      if (c == counts.end()) counts.emplace_back(v[i], 1);
      else ++c->second;
    }
    auto major = std::max_element(counts.begin(), counts.end(),
                                  [](auto& a, auto& b) { return a.second < b.second; });
    for (size_t i = 0; i < reports.size(); ++i)
      if (v[i] != major->first)
        out[i].push_back(fmt::format("{}: {} (majority, {} of {} nodes: {})", key, v[i],
                                     major->second, reports.size(), major->first));
  }
  return out;
}

static std::string key_part(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back((std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_');
  return out;
}

std::vector<std::pair<std::string, std::string>> flatten(const Report& r) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("doctor.host", r.host);
  out.emplace_back("doctor.verdict", r.verdict);
  for (const auto& c : r.checks)
    out.emplace_back("doctor." + key_part(c.area) + "." + key_part(c.name), c.status + ": " + c.evidence);
  return out;
}

std::vector<std::pair<std::string, std::string>> flatten(const std::vector<Report>& reports) {
  std::vector<std::pair<std::string, std::string>> out;
  int code = exit_code(reports);
  out.emplace_back("doctor.verdict", code == kExitReady      ? "ready"
                                     : code == kExitDegraded ? "degraded"
                                                             : "not ready");
  std::string hosts;
  for (const auto& r : reports) hosts += (hosts.empty() ? "" : ",") + r.host;
  out.emplace_back("doctor.hosts", hosts);
  for (const auto& r : reports) {
    const std::string prefix = "doctor." + key_part(r.host) + ".";
    out.emplace_back(prefix + "verdict", r.verdict);
    for (const auto& c : r.checks)
      out.emplace_back(prefix + key_part(c.area) + "." + key_part(c.name), c.status + ": " + c.evidence);
  }
  return out;
}

namespace {
std::map<std::string, ReadinessRule>& readiness_rules() {
  static std::map<std::string, ReadinessRule> rules;
  return rules;
}
}  // namespace

ReadinessRegistrar::ReadinessRegistrar(const char* transport, ReadinessRule rule) {
  readiness_rules()[transport] = rule;
}

std::string readiness_warning(const Report& r, bool wants_cuda_direct, const std::string& transport) {
  std::vector<const Check*> blocking, weak;
  auto rules = readiness_rules().find(transport);
  const ReadinessRule rule = rules == readiness_rules().end() ? nullptr : rules->second;
  for (const auto& c : r.checks) {
    Weight w = wants_cuda_direct && c.area == "gpu" ? Weight::counts
               : rule                               ? rule(c, wants_cuda_direct)
                                                    : Weight::ignored;
    if (w == Weight::ignored) continue;
    if (w == Weight::blocks || c.status == "fail" || (w == Weight::strict && c.status == "warn"))
      blocking.push_back(&c);
    else if (c.status == "warn")
      weak.push_back(&c);
  }
  const auto& list = blocking.empty() ? weak : blocking;
  if (list.empty()) return {};
  // The whole evidence: a cut one reads as a different claim.
  auto brief = [](const Check& c) { return fmt::format("{}/{}: {}", c.area, c.name, c.evidence); };
  std::string what = wants_cuda_direct ? "-m cuda --path direct over " + transport
                                       : "host memory over " + transport;
  std::string line = fmt::format("{} is {} for {}: {}", r.host,
                                 blocking.empty() ? "degraded" : "not ready", what, brief(*list[0]));
  if (list.size() > 1) line += fmt::format(" (and {} more)", list.size() - 1);
  return line + "; the run goes on, and each row's path says what moved its bytes (`gdrbench doctor` lists the fixes)";
}

}  // namespace gdr::doctor
