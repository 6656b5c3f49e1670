// What GPU-initiated transfers need that the GPUDirect RDMA checks do not read: the UCX
// build's device API and the transports that export device endpoints, and for InfiniBand
// GPUDirect Async the mlx5 devices, the NVIDIA driver's peer-mapping setting and each GPU's
// BAR1. Files only (sysfs, procfs, the UCX modules' bytes): no dlopen of a CUDA module, so a
// node without a GPU driver reads the same.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "doctor/facts.h"

namespace fs = std::filesystem;

namespace gdr::doctor::detail {

std::vector<std::string> device_ep_symbols(const std::string& bytes) {
  static const std::string head = "uct_", tail = "_ep_get_device_ep";
  std::vector<std::string> out;
  for (size_t at = bytes.find(tail); at != std::string::npos; at = bytes.find(tail, at + 1)) {
    size_t b = at;  // back over [a-z0-9_] to the start of the name
    while (b > 0 && (std::islower(static_cast<unsigned char>(bytes[b - 1])) ||
                     std::isdigit(static_cast<unsigned char>(bytes[b - 1])) || bytes[b - 1] == '_'))
      --b;
    std::string name = bytes.substr(b, at - b);  // "uct_cuda_ipc"
    if (name.rfind(head, 0) != 0 || name.size() == head.size()) continue;
    name = name.substr(head.size());
    if (name == "rc_gdaki") name = "rc_gda";  // UCX 1.22's gda module names its functions so
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

UcxDeviceFacts read_ucx_device(const std::string& lib_dir, int device_api_symbol) {
  UcxDeviceFacts u;
  u.lib_dir = lib_dir;
  u.device_api = device_api_symbol;
  if (lib_dir.empty()) return u;
  std::error_code ec;
  u.headers = fs::exists(fs::path(lib_dir) / ".." / "include/ucp/api/device/ucp_device_impl.h", ec);
  for (const auto& name : list_dir(lib_dir + "/ucx")) {
    // One file per module: libuct_cuda.so.0 (or the bare .so where no versioned name exists).
    if (name.rfind("libuct_", 0) != 0) continue;
    bool so0 = name.size() > 5 && name.compare(name.size() - 5, 5, ".so.0") == 0;
    bool so = name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0;
    if (!so0 && !(so && !exists(lib_dir + "/ucx/" + name + ".0"))) continue;
    std::ifstream in(lib_dir + "/ucx/" + name, std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (const auto& tl : device_ep_symbols(bytes)) u.device_ep.emplace_back(tl, name);
  }
  return u;
}

long long bar1_from_resource(const std::string& resource) {
  std::istringstream in(resource);
  std::string line;
  for (int i = 0; i < 2; ++i)
    if (!std::getline(in, line)) return -1;
  unsigned long long start = 0, end = 0, flags = 0;
  if (std::sscanf(line.c_str(), "%llx %llx %llx", &start, &end, &flags) != 3) return -1;
  if (start == 0 && end == 0) return -1;  // BAR1 not implemented or not assigned
  return static_cast<long long>(end - start + 1);
}

bool peer_mapping_override_set(const std::string& dwords) {
  std::string s;
  for (char c : dwords) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  const std::string key = "peermappingoverride";
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + 1)) {
    size_t eq = s.find_first_not_of(" \t", at + key.size());
    if (eq == std::string::npos || s[eq] != '=') continue;
    size_t v = s.find_first_not_of(" \t", eq + 1);
    if (v == std::string::npos) return false;
    unsigned long value = std::strtoul(s.c_str() + v, nullptr, 0);
    return value != 0;
  }
  return false;
}

namespace {

// NVreg_RegistryDwords: /proc/driver/nvidia/params ("RegistryDwords: \"...\""), else the
// module parameter in sysfs. Sets registry_source to the file read; -1 when neither is there.
void read_registry_dwords(const Options& o, IbgdaFacts& g) {
  const std::string params = join_path(o.proc_root, "driver/nvidia/params");
  std::ifstream in(params);
  if (in) {
    g.registry_source = params;
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("RegistryDwords:", 0) != 0) continue;
      std::string v = line.substr(std::string("RegistryDwords:").size());
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      v.erase(0, v.find_first_not_of(' '));
      g.registry_dwords = v;
      break;
    }
    g.peer_mapping_override = peer_mapping_override_set(g.registry_dwords) ? 1 : 0;
    return;
  }
  const std::string mod = join_path(o.sys_root, "module/nvidia/parameters/NVreg_RegistryDwords");
  if (auto v = read_line(mod)) {
    g.registry_source = mod;
    g.registry_dwords = *v == "(null)" ? "" : *v;
    g.peer_mapping_override = peer_mapping_override_set(g.registry_dwords) ? 1 : 0;
  }
}

}  // namespace

IbgdaFacts read_ibgda(const Options& o, const std::vector<std::string>& gpus) {
  IbgdaFacts g;
  for (const auto& dev : rdma_device_names(o)) {
    std::error_code ec;
    auto link = fs::read_symlink(join_path(o.sys_root, "class/infiniband/" + dev + "/device/driver"), ec);
    if (!ec && link.filename() == "mlx5_core") g.mlx5.push_back(dev);
  }
  g.mlx5_ib = exists(join_path(o.sys_root, "module/mlx5_ib"));
  read_registry_dwords(o, g);
  for (const auto& bdf : gpus) {
    std::ifstream in(join_path(o.sys_root, "bus/pci/devices/" + bdf + "/resource"));
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    g.bar1.emplace_back(bdf, in ? bar1_from_resource(text) : -1);
  }
  return g;
}

}  // namespace gdr::doctor::detail
