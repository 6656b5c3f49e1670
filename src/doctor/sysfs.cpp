// Reads of sysfs and procfs under injectable roots, so that every parser here
// runs in unit tests against a fake tree.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "doctor/facts.h"

namespace fs = std::filesystem;

namespace gdr::doctor::detail {

std::string join_path(const std::string& root, const std::string& rel) {
  if (root.empty()) return rel;
  if (!rel.empty() && rel.front() == '/')
    return (root.back() == '/' ? root.substr(0, root.size() - 1) : root) + rel;
  return root + (root.back() == '/' ? "" : "/") + rel;
}

static std::string trim(std::string s) {
  auto sp = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && sp(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && sp(s[i])) ++i;
  return s.substr(i);
}

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) {
    // An empty file reads as "", but a sysfs attribute whose read fails
    // (EINVAL on an unused GID type) sets badbit: report it as absent.
    if (in.bad()) return std::nullopt;
    return std::string{};
  }
  return trim(line);
}

static std::optional<std::string> read_all(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data(max, '\0');
  in.read(data.data(), static_cast<std::streamsize>(max));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string normalize_busid(const std::string& raw) {
  std::string id;
  for (char c : raw) id.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  id = trim(id);
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(id.c_str(), "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) == 4) {
  } else if (std::sscanf(id.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3) {
    dom = 0;
  } else {
    return {};
  }
  if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
  return buf;
}

PeerMemFacts detect_peermem(const Options& o) {
  PeerMemFacts p;
  p.nvidia_peermem = exists(join_path(o.sys_root, "module/nvidia_peermem"));
  p.nv_peer_mem = exists(join_path(o.sys_root, "module/nv_peer_mem"));
  p.memory_peers = list_dir(join_path(o.sys_root, "kernel/mm/memory_peers"));
  return p;
}

std::vector<Gid> read_gids(const Options& o, const std::string& dev, int port) {
  const std::string base =
      join_path(o.sys_root, "class/infiniband/" + dev + "/ports/" + std::to_string(port));
  std::vector<Gid> out;
  for (const auto& idx : list_dir(base + "/gids")) {
    if (idx.empty() || !std::all_of(idx.begin(), idx.end(), ::isdigit)) continue;
    auto gid = read_line(base + "/gids/" + idx);
    if (!gid || gid->empty()) continue;
    if (std::all_of(gid->begin(), gid->end(), [](char c) { return c == '0' || c == ':'; }))
      continue;  // unused table entry
    Gid g;
    g.index = std::stoi(idx);
    g.gid = *gid;
    g.type = read_line(base + "/gid_attrs/types/" + idx).value_or("");
    g.ndev = read_line(base + "/gid_attrs/ndevs/" + idx).value_or("");
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [](const Gid& a, const Gid& b) { return a.index < b.index; });
  return out;
}

static bool is_roce_v2(const Gid& g) {
  std::string t;
  for (char c : g.type) t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return t.find("roce v2") != std::string::npos;
}

int preferred_roce_v2_gid(const std::vector<Gid>& gids) {
  // IPv4-mapped addresses (::ffff:a.b.c.d) route between subnets the way
  // NCCL and perftest expect; otherwise any RoCE v2 entry.
  for (const auto& g : gids)
    if (is_roce_v2(g) && g.gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0) return g.index;
  for (const auto& g : gids)
    if (is_roce_v2(g)) return g.index;
  return -1;
}

std::vector<std::string> rdma_device_names(const Options& o) {
  return list_dir(join_path(o.sys_root, "class/infiniband"));
}

// "4: ACTIVE" -> "ACTIVE"
static std::string after_colon(const std::string& s) {
  auto pos = s.find(':');
  return pos == std::string::npos ? s : trim(s.substr(pos + 1));
}

// PCI bus id a sysfs device link points to, walking up past non-PCI parents.
std::string pci_of_link(const std::string& link) {
  std::error_code ec;
  fs::path p = fs::canonical(link, ec);
  if (ec) {
    // A fake tree may hold a relative link that leaves it; use the text.
    p = fs::read_symlink(link, ec);
    if (ec) return {};
  }
  for (; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    auto id = normalize_busid(p.filename().string());
    if (!id.empty() && p.filename().string().find(':') != std::string::npos) return id;
  }
  return {};
}

HcaFacts read_hca_sysfs(const Options& o, const std::string& dev) {
  HcaFacts h;
  h.name = dev;
  const std::string base = join_path(o.sys_root, "class/infiniband/" + dev);
  h.pci = pci_of_link(base + "/device");
  for (const auto& p : list_dir(base + "/ports")) {
    if (p.empty() || !std::all_of(p.begin(), p.end(), ::isdigit)) continue;
    PortFacts pf;
    pf.port = std::stoi(p);
    const std::string pb = base + "/ports/" + p;
    pf.state = after_colon(read_line(pb + "/state").value_or(""));
    pf.phys_state = after_colon(read_line(pb + "/phys_state").value_or(""));
    pf.link_layer = read_line(pb + "/link_layer").value_or("");
    pf.rate = read_line(pb + "/rate").value_or("");
    pf.gids = read_gids(o, dev, pf.port);
    h.ports.push_back(std::move(pf));
  }
  std::sort(h.ports.begin(), h.ports.end(),
            [](const PortFacts& a, const PortFacts& b) { return a.port < b.port; });
  return h;
}

std::vector<std::string> nvidia_pci_functions(const Options& o) {
  std::vector<std::string> out;
  const std::string base = join_path(o.sys_root, "bus/pci/devices");
  for (const auto& d : list_dir(base)) {
    auto vendor = read_line(base + "/" + d + "/vendor");
    auto cls = read_line(base + "/" + d + "/class");
    if (!vendor || !cls) continue;
    // class is 0xCCSSPP: 0x0300xx VGA, 0x0302xx 3D controller.
    if (*vendor == "0x10de" && cls->rfind("0x03", 0) == 0) {
      auto id = normalize_busid(d);
      if (!id.empty()) out.push_back(id);
    }
  }
  return out;
}

AcsFacts parse_acs(const std::string& bdf, const std::string& cfg) {
  AcsFacts a;
  a.bdf = bdf;
  if (cfg.size() < 0x104) return a;  // only the first 64/256 bytes: not root
  a.readable = true;
  auto u16 = [&](size_t off) {
    return static_cast<uint16_t>(static_cast<unsigned char>(cfg[off]) |
                                 (static_cast<unsigned char>(cfg[off + 1]) << 8));
  };
  auto u32 = [&](size_t off) {
    return static_cast<uint32_t>(u16(off)) | (static_cast<uint32_t>(u16(off + 2)) << 16);
  };
  size_t off = 0x100;
  for (int guard = 0; guard < 96 && off >= 0x100 && off + 8 <= cfg.size(); ++guard) {
    uint32_t hdr = u32(off);
    if (hdr == 0 || hdr == 0xffffffffu) break;
    if ((hdr & 0xffff) == 0x000d) {  // Access Control Services
      a.present = true;
      a.control = u16(off + 6);
      break;
    }
    off = (hdr >> 20) & 0xffc;
    if (off == 0) break;
  }
  return a;
}

AcsFacts read_acs(const Options& o, const std::string& bdf) {
  auto cfg = read_all(join_path(o.sys_root, "bus/pci/devices/" + bdf + "/config"), 4096);
  if (!cfg) return AcsFacts{bdf};
  return parse_acs(bdf, *cfg);
}

std::string iommu_group_type(const Options& o, const std::string& bdf) {
  std::error_code ec;
  auto target = fs::read_symlink(join_path(o.sys_root, "bus/pci/devices/" + bdf + "/iommu_group"), ec);
  if (ec) return {};
  const std::string group = target.filename().string();
  return read_line(join_path(o.sys_root, "kernel/iommu_groups/" + group + "/type")).value_or("unknown");
}

std::vector<std::string> iommu_units(const Options& o) {
  return list_dir(join_path(o.sys_root, "class/iommu"));
}

KernelFacts read_kernel(const Options& o) {
  KernelFacts k;
  k.release = read_line(join_path(o.proc_root, "sys/kernel/osrelease")).value_or("");
  std::sscanf(k.release.c_str(), "%d.%d", &k.major, &k.minor);
  return k;
}

NvidiaModuleFacts read_nvidia_module(const Options& o) {
  NvidiaModuleFacts m;
  m.loaded = exists(join_path(o.sys_root, "module/nvidia"));
  m.version = read_line(join_path(o.sys_root, "module/nvidia/version")).value_or("");
  auto v = read_line(join_path(o.proc_root, "driver/nvidia/version"));
  if (v) m.open_module = v->find("Open Kernel Module") != std::string::npos ? 1 : 0;
  return m;
}

bool has_cap_ipc_lock(const Options& o) {
  std::ifstream in(join_path(o.proc_root, "self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    unsigned long long caps = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (caps >> 14) & 1;  // CAP_IPC_LOCK
  }
  return false;
}

}  // namespace gdr::doctor::detail
