#include "ucx_path.h"

#include <fmt/format.h>
#include <uct/api/uct.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <mutex>
#include <sstream>

namespace gdr::ucx {
namespace {

// The lines of a printout (views into `text`).
std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = std::min(text.find('\n', pos), text.size());
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> words(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "3:rc_mlx5/mlx5_0:1.0" -> tl "rc_mlx5", dev "mlx5_0:1" (".0": the path index).
bool parse_resource(const std::string& w, EpLane& l) {
  std::size_t colon = w.find(':'), slash = w.find('/');
  if (colon == std::string::npos || slash == std::string::npos || slash < colon) return false;
  l.tl = w.substr(colon + 1, slash - colon - 1);
  l.dev = w.substr(slash + 1);
  if (std::size_t dot = l.dev.rfind('.'); dot != std::string::npos) l.dev.resize(dot);
  return !l.tl.empty() && !l.dev.empty();
}

// cuda_copy and gdr_copy copy between memory types inside one process; UCX
// uses them to stage device memory, never to reach a peer.
bool local_copy_tl(const EpLane& l) { return l.tl == "cuda_copy" || l.tl == "gdr_copy"; }

std::string join(const std::vector<const EpLane*>& lanes) {
  std::string s;
  for (auto* l : lanes) {
    if (!s.empty()) s += ',';
    s += l->name();
  }
  return s;
}

// The hardware a lane's bytes cross, for the ceiling (transports/transport.h).
void add_links(const EpLane& l, bool device, std::vector<std::string>& links) {
  if (l.md == "ib") {
    links.push_back("hca:" + l.dev);
    if (device) links.push_back("gpu");
  } else if (l.tl == "cuda_ipc") {
    links.push_back("copy-d2d");
  } else if (l.tl == "tcp") {
    links.push_back("tcp");
  } else {
    links.push_back("shm");
  }
}

}  // namespace

EpInfo parse_ep_info(std::string_view text) {
  EpInfo info;
  for (std::string_view line : lines(text)) {
    std::vector<std::string> w = words(line);
    if (!w.empty() && w[0] == "#") w.erase(w.begin());
    if (w.size() >= 2 && w[0].rfind("lane[", 0) == 0) {
      EpLane l;
      if (!parse_resource(w[1], l)) continue;
      for (std::size_t i = 2; i < w.size(); ++i) {
        const std::string& t = w[i];
        if (t.rfind("md[", 0) == 0 && t.find('/') != std::string::npos) {
          std::size_t a = t.find('/') + 1, b = t.find('/', a);
          l.md = t.substr(a, b == std::string::npos ? std::string::npos : b - a);
        }
        if (t == "am") l.am = true;
        if (t.rfind("am_bw", 0) == 0) l.am_bw = true;
        if (t.rfind("rma_bw", 0) == 0) l.rma_bw = true;
      }
      info.lanes.push_back(l);
    } else if (w.size() >= 2 && w[0] == "tag_send:") {
      // "0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)"
      std::string s = w[1];
      std::size_t from = 0, i = 0;
      std::string proto;
      while (i < s.size()) {
        std::size_t dots = s.find("..", i);
        std::string tok = s.substr(i, dots == std::string::npos ? std::string::npos : dots - i);
        i = dots == std::string::npos ? s.size() : dots + 2;
        if (tok.size() > 2 && tok.front() == '<') {
          proto = tok.substr(1, tok.size() - 2);
          continue;
        }
        std::size_t bound = tok == "(inf)" ? SIZE_MAX : std::strtoull(tok.c_str(), nullptr, 10);
        if (!proto.empty()) info.tag_send.push_back({from, bound, proto});
        from = bound;
        proto.clear();
      }
    }
  }
  return info;
}

std::string ep_print(ucp_ep_h ep) {
  char* text = nullptr;
  std::size_t size = 0;
  std::string all;
  if (std::FILE* f = open_memstream(&text, &size)) {
    ucp_ep_print_info(ep, f);
    std::fclose(f);
    all.assign(text, size);
    std::free(text);
  }
  return all;
}

EpInfo ep_info_of(ucp_ep_h ep) { return parse_ep_info(ep_print(ep)); }

std::string lane_names(const EpInfo& info) {
  std::string out;
  for (auto& l : info.lanes) {
    if (out.find(l.name()) != std::string::npos) continue;
    if (!out.empty()) out += ',';
    out += l.name();
  }
  return out;
}

std::string proto_at(const EpInfo& info, std::size_t bytes) {
  for (auto& r : info.tag_send)
    if (bytes >= r.from && bytes < r.to) return r.proto;
  return {};
}

PathTaken path_for(const EpInfo& info, bool device, std::size_t bytes,
                   const std::function<bool(const EpLane&)>& reaches_cuda) {
  PathTaken p;
  std::string proto = proto_at(info, bytes);
  std::vector<const EpLane*> am, rma_bw, am_bw;
  for (auto& l : info.lanes) {
    if (local_copy_tl(l)) continue;
    if (l.am) am.push_back(&l);
    if (l.rma_bw) rma_bw.push_back(&l);
    if (l.am_bw) am_bw.push_back(&l);
  }
  if (proto.empty()) {
    p.how = fmt::format("ucx over {}", lane_names(info));
    p.unknown = fmt::format("UCX reported no protocol for {} B: no send of that size was queried and "
                            "ucp_ep_print_info has no tag_send ranges (UCX protocols v2 print a table instead)",
                            bytes);
    return p;
  }
  if (proto.rfind("egr", 0) == 0) {
    // Eager: the active-message lane. UCX 1.13 does not use short sends for
    // device memory and packs eager fragments of it through a host buffer
    // with cuda_copy (or gdr_copy) before the wire.
    p.how = fmt::format("ucx {} over {}", device ? "egr/bcopy" : proto, join(am));
    for (auto* l : am) add_links(*l, false, p.links);
    if (device) {
      p.via_host = true;
      std::size_t rndv = SIZE_MAX;
      for (auto& r : info.tag_send)
        if (r.proto == "rndv") rndv = std::min(rndv, r.from);
      p.cause = fmt::format("below UCX's rendezvous threshold ({}), UCX copies eager messages of device memory "
                            "through a host buffer (cuda_copy/gdr_copy)",
                            rndv == SIZE_MAX ? std::string("none") : fmt::format("{} B", rndv));
      p.links.insert(p.links.begin(), {"copy-d2h", "copy-h2d"});
    }
    return p;
  }
  // Rendezvous: zero-copy over the rma_bw lanes that can touch the buffer;
  // device memory that none of them reaches is pipelined through host
  // bounce buffers (cuda_copy) over the same lanes.
  std::vector<const EpLane*> direct;
  for (auto* l : rma_bw)
    if (device ? reaches_cuda(*l) : l->tl != "cuda_ipc") direct.push_back(l);
  if (!direct.empty()) {
    p.how = fmt::format("ucx rndv zcopy over {}", join(direct));
    for (auto* l : direct) add_links(*l, device, p.links);
    return p;
  }
  const auto& carriers = rma_bw.empty() ? am_bw : rma_bw;
  p.how = fmt::format("ucx rndv over {}{}", join(carriers), device ? " through host bounce buffers" : "");
  for (auto* l : carriers) add_links(*l, false, p.links);
  if (device) {
    p.via_host = true;
    p.cause = fmt::format("no rendezvous lane of this endpoint reaches CUDA memory ({}; uct_md_query: "
                          "host memory only), so UCX pipelines through host bounce buffers (cuda_copy)",
                          rma_bw.empty() ? "no rma_bw lane" : "rma_bw lanes " + join(rma_bw));
    p.links.insert(p.links.begin(), {"copy-d2h", "copy-h2d"});
  }
  return p;
}

namespace {

// "rc_mlx5/mlx5_0:1" as a lane of its memory domain's component, which the
// info string does not name: the InfiniBand/RoCE transports register with "ib".
EpLane lane_of(const std::string& word) {
  EpLane l;
  std::size_t slash = word.find('/');
  l.tl = word.substr(0, slash);
  l.dev = word.substr(slash + 1);
  bool ib = l.tl.rfind("rc", 0) == 0 || l.tl.rfind("dc", 0) == 0 || l.tl.rfind("ud", 0) == 0;
  l.md = ib ? "ib" : l.tl;
  return l;
}

bool has(const std::string& s, const char* w) { return s.find(w) != std::string::npos; }

}  // namespace

std::optional<SendProto> parse_send_info(std::string_view text) {
  std::vector<std::string> w = words(text);
  // "... tag_send from <mem> memory length <n> <description...> <tl/dev>... <x> MB/s <y> us"
  // The memory is named up to "length": "host memory", "cuda/GPU0" (1.22 on an H200).
  auto at = std::find(w.begin(), w.end(), "tag_send");
  if (at == w.end() || w.end() - at < 6 || at[1] != "from") return std::nullopt;
  auto len = std::find(at + 2, w.end(), "length");
  if (len == at + 2 || w.end() - len < 3) return std::nullopt;
  SendProto s;
  for (auto it = at + 2; it != len; ++it)
    if (*it != "memory") s.mem += (s.mem.empty() ? "" : " ") + *it;
  s.bytes = std::strtoull(len[1].c_str(), nullptr, 10);
  for (auto it = len + 2; it != w.end(); ++it) {
    const std::string& t = *it;
    if (t == "MB/s" || t == "us" || std::isdigit(static_cast<unsigned char>(t[0]))) continue;
    if (t.find('/') == std::string::npos) {
      if (s.lanes.empty()) s.desc += (s.desc.empty() ? "" : " ") + t;
      continue;
    }
    // "cma/memory", several joined by ',' or listed one per word.
    std::size_t from = 0;
    while (from < t.size()) {
      std::size_t comma = t.find(',', from);
      std::string one = t.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      if (one.find('/') != std::string::npos) s.lanes.push_back(lane_of(one));
      from = comma == std::string::npos ? t.size() : comma + 1;
    }
  }
  if (s.desc.empty() || s.lanes.empty()) return std::nullopt;
  return s;
}

namespace {

// "256K" -> 262144; "inf" -> SIZE_MAX.
std::size_t table_size(std::string t) {
  if (t == "inf") return SIZE_MAX;
  std::size_t mult = 1;
  if (!t.empty() && std::string("KMG").find(t.back()) != std::string::npos) {
    mult = t.back() == 'K' ? 1ull << 10 : t.back() == 'M' ? 1ull << 20 : 1ull << 30;
    t.pop_back();
  }
  return std::strtoull(t.c_str(), nullptr, 10) * mult;
}

// The cells of one "| a | b | c |" line, trimmed.
std::vector<std::string> cells(std::string_view line) {
  std::vector<std::string> out;
  std::size_t a = line.find('|');
  while (a != std::string_view::npos) {
    std::size_t b = line.find('|', a + 1);
    if (b == std::string_view::npos) break;
    std::string c(line.substr(a + 1, b - a - 1));
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
    out.push_back(c);
    a = b;
  }
  return out;
}

}  // namespace

std::optional<SendProto> proto_table_row(std::string_view text, const std::string& mem, std::size_t bytes) {
  const std::string title = "tagged message by ucp_tag_send* from " + mem + " memory";
  bool in = false;
  for (std::string_view line : lines(text)) {
    std::vector<std::string> c = cells(line);
    if (c.size() == 1) in = c[0] == title || (in && c[0].rfind("tagged message", 0) != 0);
    if (!in || c.size() != 3 || c[0].find("..") == std::string::npos) continue;
    std::size_t dots = c[0].find("..");
    std::size_t from = table_size(c[0].substr(0, dots)), to = table_size(c[0].substr(dots + 2));
    if (bytes < from || bytes > to) continue;
    std::string desc = c[1].rfind("(?) ", 0) == 0 ? c[1].substr(4) : c[1];
    return parse_send_info(fmt::format("tag_send from {} memory length {} {} {}", mem, bytes, desc, c[2]));
  }
  return std::nullopt;
}

PathTaken path_from_send(const SendProto& s, bool device,
                         const std::function<bool(const EpLane&)>& reaches_cuda) {
  PathTaken p;
  std::vector<const EpLane*> carriers, copies;
  for (auto& l : s.lanes) (local_copy_tl(l) ? copies : carriers).push_back(&l);
  p.how = fmt::format("ucx {} over {}", s.desc, join(carriers.empty() ? copies : carriers));
  if (!copies.empty()) p.how += fmt::format(" (local copies by {})", join(copies));
  // Copy-in/copy-out and pipelines pass the bytes through a host buffer; a
  // zero-copy protocol moves them between the users' buffers themselves.
  bool staged = has(s.desc, "copy-in") || has(s.desc, "copy-out") || has(s.desc, "pipeline") ||
                has(s.desc, "bcopy") || has(s.desc, "staging") || !copies.empty();
  bool zcopy = has(s.desc, "zero-copy") || has(s.desc, "short");
  for (auto* l : carriers) add_links(*l, device && !staged, p.links);
  if (!device) {
    if (!staged && !zcopy) p.unknown = fmt::format("UCX protocol '{}' is not one gdrbench knows", s.desc);
    return p;
  }
  bool all_reach = !carriers.empty() &&
                   std::all_of(carriers.begin(), carriers.end(), [&](auto* l) { return reaches_cuda(*l); });
  if (staged || (zcopy && !all_reach)) {
    p.via_host = true;
    p.cause = fmt::format("UCX chose '{}' over {} for {} B of device memory: the bytes pass through a host "
                          "buffer{}",
                          s.desc, join(carriers.empty() ? copies : carriers), s.bytes,
                          staged ? "" : " (no transport of it reaches CUDA memory)");
    p.links.insert(p.links.begin(), {"copy-d2h", "copy-h2d"});
  } else if (!zcopy) {
    p.unknown = fmt::format("UCX protocol '{}' for device memory is not one gdrbench knows", s.desc);
  }
  return p;
}

bool md_reaches_cuda(const EpLane& lane) {
  // The md resource's name: the device for ib ("mlx5_0" of "mlx5_0:1"),
  // else the component's own name ("cuda_ipc", "cma").
  std::string want = lane.md == "ib" ? lane.dev.substr(0, lane.dev.find(':')) : lane.md;
  // Domains whose answer is known by name are never opened: opening and
  // closing a second cuda_ipc domain in a process whose UCX context uses one
  // tore down state the context still needed (UCX 1.13.1 on the H200: a
  // segfault in uct_cuda_ipc_rkey_unpack at the next rendezvous). Only the
  // network domains (ib: may or may not register CUDA memory, with
  // nvidia-peermem or dma-buf) are opened and asked.
  static const std::set<std::string> cuda_md = {"cuda_ipc", "cuda_cpy", "cuda_copy", "gdr_copy"};
  static const std::set<std::string> host_md = {"self", "sysv", "posix", "cma", "knem", "xpmem", "tcp"};
  if (cuda_md.count(lane.md) || cuda_md.count(lane.tl)) return true;
  if (host_md.count(lane.md) || host_md.count(lane.tl)) return false;
  static std::mutex mu;
  static std::map<std::string, bool> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(want); it != cache.end()) return it->second;
  bool found = false, cuda = false;
  uct_component_h* comps = nullptr;
  unsigned n = 0;
  if (uct_query_components(&comps, &n) == UCS_OK) {
    for (unsigned c = 0; c < n && !found; ++c) {
      uct_component_attr_t ca{};
      ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
      if (uct_component_query(comps[c], &ca) != UCS_OK) continue;
      std::vector<uct_md_resource_desc_t> res(ca.md_resource_count);
      ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
      ca.md_resources = res.data();
      if (uct_component_query(comps[c], &ca) != UCS_OK) continue;
      for (auto& r : res) {
        if (want != r.md_name) continue;
        found = true;
        uct_md_config_t* cfg = nullptr;
        uct_md_h md = nullptr;
        if (uct_md_config_read(comps[c], nullptr, nullptr, &cfg) != UCS_OK) break;
        if (uct_md_open(comps[c], r.md_name, cfg, &md) == UCS_OK) {
          uct_md_attr_t a{};
          if (uct_md_query(md, &a) == UCS_OK)
            cuda = ((a.cap.reg_mem_types | a.cap.access_mem_types) >> UCS_MEMORY_TYPE_CUDA) & 1;
          uct_md_close(md);
        }
        uct_config_release(cfg);
        break;
      }
    }
    uct_release_component_list(comps);
  }
  // A domain not found here (another UCX than the loaded one?): by name.
  if (!found) cuda = lane.tl == "cuda_ipc";
  return cache[want] = cuda;
}

}  // namespace gdr::ucx
