#include "verbs_logic.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "src/core/errors.h"

namespace gdr::verbs {

HcaSpec parse_hca(std::string_view s) {
  HcaSpec h;
  auto colon = s.rfind(':');
  h.device = std::string(s.substr(0, colon));
  if (colon != std::string_view::npos) {
    auto p = s.substr(colon + 1);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), h.port);
    if (ec != std::errc{} || end != p.data() + p.size() || h.port < 1)
      throw UsageError(fmt::format("--hca {}: the port after ':' must be a number >= 1", s));
  }
  if (h.device.empty()) throw UsageError(fmt::format("--hca {}: no device name", s));
  return h;
}

namespace {
std::optional<std::string> read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;  // unpopulated types/<i> give EINVAL
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

bool gid_is_zero(std::string_view gid) {
  return std::all_of(gid.begin(), gid.end(), [](char c) { return c == '0' || c == ':'; });
}
}  // namespace

std::vector<GidEntry> read_gid_table(const std::string& port_dir) {
  std::vector<GidEntry> table;
  // Tables are small (rxe: 1024 slots, most HCAs 256); stop at the first gap
  // in the files rather than guessing a size.
  for (int i = 0; i < 4096; ++i) {
    auto gid = read_line(fmt::format("{}/gids/{}", port_dir, i));
    if (!gid) break;
    if (gid_is_zero(*gid)) continue;
    auto type = read_line(fmt::format("{}/gid_attrs/types/{}", port_dir, i));
    if (!type) continue;
    table.push_back({i, *gid, *type});
  }
  return table;
}

bool gid_is_ipv4_mapped(std::string_view gid) {
  return gid.starts_with("0000:0000:0000:0000:0000:ffff:");
}

bool gid_is_link_local(std::string_view gid) {
  return gid.starts_with("fe80:");
}

std::optional<GidEntry> choose_gid(const std::vector<GidEntry>& table) {
  auto rank = [](const GidEntry& e) {
    if (e.type != "RoCE v2") return 3;
    if (gid_is_ipv4_mapped(e.gid)) return 0;
    return gid_is_link_local(e.gid) ? 2 : 1;
  };
  std::optional<GidEntry> best;
  for (const auto& e : table)
    if (!best || rank(e) < rank(*best)) best = e;  // strict: keeps the first of a rank
  return best;
}

Mode parse_mode(std::string_view s) {
  if (s == "imm") return Mode::imm;
  if (s == "write") return Mode::write;
  if (s == "poll") return Mode::poll;
  throw UsageError(fmt::format("--verbs-mode '{}': use imm, write or poll", s));
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::imm: return "imm";
    case Mode::write: return "write";
    case Mode::poll: return "poll";
  }
  return "?";
}

int mtu_bytes(int ibv_mtu) {
  return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128 << ibv_mtu : 0;
}

int common_mtu(int mine, int theirs) { return std::min(mine, theirs); }

AlignedRange page_aligned(std::uint64_t addr, std::uint64_t len, std::uint64_t page) {
  AlignedRange r;
  r.base = addr & ~(page - 1);
  std::uint64_t end = (addr + len + page - 1) & ~(page - 1);
  r.size = end - r.base;
  r.offset = addr - r.base;
  return r;
}

}  // namespace gdr::verbs
