// The human table. One node: every check with its evidence, and the fix
// under each warn or fail. Several nodes: a summary line per node, the full
// table of one node of the majority, then each node that differs from the
// majority with only the checks that differ.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "doctor/doctor.h"

namespace gdr::doctor {
namespace {

const Check* find(const Report& r, const std::string& key) {
  for (const auto& c : r.checks)
    if (c.area + "/" + c.name == key) return &c;
  return nullptr;
}

// The fix is shown for a warn or fail; and for the gpu-initiated rows, which are n/a when a
// piece is missing (they never change the verdict) but still say how to add it.
bool shows_fix(const Check& c) {
  if (c.fix.empty()) return false;
  return c.status == "warn" || c.status == "fail" || c.area == "gpu-initiated";
}

void table_of(const std::vector<const Check*>& checks, std::string& out) {
  size_t wa = 4, wn = 5;
  for (const auto* c : checks) {
    wa = std::max(wa, c->area.size());
    wn = std::max(wn, c->name.size());
  }
  out += fmt::format("  {:<{}}  {:<{}}  {:<6}  {}\n", "AREA", wa, "CHECK", wn, "STATUS", "EVIDENCE");
  for (const auto* c : checks) {
    out += fmt::format("  {:<{}}  {:<{}}  {:<6}  {}\n", c->area, wa, c->name, wn, c->status, c->evidence);
    if (shows_fix(*c)) out += fmt::format("  {:<{}}  {:<{}}  {:<6}  fix: {}\n", "", wa, "", wn, "", c->fix);
  }
}

std::string counts(const std::vector<Report>& reports) {
  std::map<std::string, int> n;
  for (const auto& r : reports) ++n[r.verdict];
  std::string out;
  for (const char* v : {"ready", "degraded", "not ready"})
    if (n[v]) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n[v], v);
  return out;
}

}  // namespace

std::string to_table(const std::vector<Report>& reports) {
  if (reports.empty()) return "gdrbench doctor: no report\n";
  std::string out;
  int code = exit_code(reports);
  if (reports.size() == 1) {
    const auto& r = reports[0];
    out += fmt::format("gdrbench doctor: {}: GPUDirect RDMA {} (exit {})\n\n", r.host, r.verdict, code);
    std::vector<const Check*> all;
    for (const auto& c : r.checks) all.push_back(&c);
    table_of(all, out);
    return out;
  }

  auto diffs = differences(reports);
  out += fmt::format("gdrbench doctor: {} nodes: {} (exit {})\n", reports.size(), counts(reports), code);
  for (const auto& r : reports) out += fmt::format("  {}: {}\n", r.host, r.verdict);

  size_t rep = 0;
  for (size_t i = 0; i < reports.size(); ++i)
    if (diffs[i].empty()) {
      rep = i;
      break;
    }
  size_t agree = std::count_if(diffs.begin(), diffs.end(), [](auto& d) { return d.empty(); });
  out += fmt::format("\nChecks of {} ({}):\n", reports[rep].host,
                     agree == reports.size() ? "all nodes agree"
                                             : fmt::format("as on {} of {} nodes", agree, reports.size()));
  std::vector<const Check*> all;
  for (const auto& c : reports[rep].checks) all.push_back(&c);
  table_of(all, out);

  bool header = false;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (diffs[i].empty()) continue;
    if (!header) out += "\nNodes that differ from the majority:\n";
    header = true;
    out += fmt::format("\n{} ({}):\n", reports[i].host, reports[i].verdict);
    for (const auto& d : diffs[i]) {
      out += "  " + d + "\n";
      const Check* c = find(reports[i], d.substr(0, d.find(": ")));
      if (!c) continue;
      out += fmt::format("      {}\n", c->evidence);
      if (shows_fix(*c)) out += fmt::format("      fix: {}\n", c->fix);
    }
  }
  return out;
}

}  // namespace gdr::doctor
