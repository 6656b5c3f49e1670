// What `validate` compares across hosts: each NIC's, port's and GPU's configuration (MTU,
// link rate and width, driver and firmware versions, PCIe link, ECC, clocks, persistence)
// and each port's error counters. Values that cannot be read are "unknown": the comparison
// skips them, so an unreadable value never reads as a host unlike its peers.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "doctor/facts.h"

namespace fs = std::filesystem;

namespace gdr::doctor::detail {
namespace {

constexpr const char* kUnknown = "unknown";
constexpr size_t kMaxNetdevs = 64;  // a host with hundreds of container veths: the first 64

std::optional<std::uint64_t> read_u64(const std::string& path) {
  auto v = read_line(path);
  if (!v || v->empty() || !std::all_of(v->begin(), v->end(), ::isdigit) || v->size() > 19) return std::nullopt;
  return std::stoull(*v);
}

std::string link_name(const std::string& path) {  // basename of a symlink's target, "" if none
  std::error_code ec;
  auto t = fs::read_symlink(path, ec);
  return ec ? std::string{} : t.filename().string();
}

std::string or_unknown(const std::string& s) { return s.empty() ? kUnknown : s; }
std::string or_unknown(long long v) { return v < 0 ? kUnknown : std::to_string(v); }
std::string on_off(int v) { return v < 0 ? kUnknown : v ? "on" : "off"; }

// The error counters of an InfiniBand (or RoCE) port, as the IB spec's PortCounters name them.
constexpr const char* kIbCounters[] = {
    "link_downed",        "link_error_recovery",          "symbol_error",
    "port_rcv_errors",    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_discards", "port_xmit_constraint_errors",  "port_rcv_constraint_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped"};

// Software devices a host has or not, up or not, as its containers and tunnels come and go
// (docker0 is down until a container starts): not configuration to compare. A NIC (no kind),
// a veth (an emulated host's or a container's NIC), a bond or a VLAN are compared.
bool software_netdev(const std::string& kind) {
  static const std::set<std::string> kinds = {
      "bridge", "dummy", "ifb", "tun", "tap", "vxlan", "geneve", "wireguard", "openvswitch", "macvlan",
      "macvtap", "ipvlan", "gre", "gretap", "ip6gre", "ip6gretap", "ipip", "ip6tnl", "sit", "vti", "nlmon", "vrf"};
  return kinds.count(kind) != 0;
}

// TCP's own counts in this network namespace (/proc/net/snmp, /proc/net/netstat: a header
// line of names, then a line of values, per protocol). Loss that TCP hides from the timings
// (it resends within a round trip) still shows: resends on the sending host, segments that
// arrived out of order on the receiving one. The segment counts are what validate divides by.
void read_tcp_counters(const Options& o, std::vector<std::pair<std::string, std::uint64_t>>& counters) {
  const std::pair<const char*, std::set<std::string>> files[] = {
      {"net/snmp", {"OutSegs", "InSegs", "RetransSegs"}},
      {"net/netstat", {"TCPOFOQueue", "TCPTimeouts", "TCPLossProbes"}}};
  for (const auto& [file, wanted] : files) {
    std::ifstream in(join_path(o.proc_root, file));
    std::string names, values;
    const std::string proto = std::string(file) == "net/snmp" ? "Tcp:" : "TcpExt:";
    while (std::getline(in, names) && names.rfind(proto, 0) != 0) {
    }
    if (!in || !std::getline(in, values) || values.rfind(proto, 0) != 0) continue;
    std::istringstream ns(names.substr(proto.size())), vs(values.substr(proto.size()));
    std::string name, value;
    while (ns >> name && vs >> value) {
      if (!wanted.count(name) || value.empty() || value.size() > 19 ||
          !std::all_of(value.begin(), value.end(), ::isdigit))
        continue;
      counters.emplace_back("tcp/" + name, std::stoull(value));
    }
  }
}

}  // namespace

// Ethernet netdev statistics worth a second look after a run (drops, errors, carrier).
const std::vector<std::string>& netdev_counter_names() {
  static const std::vector<std::string> names = {
      "rx_dropped", "tx_dropped", "rx_errors", "tx_errors", "rx_crc_errors", "rx_missed_errors",
      "tx_carrier_errors", "carrier_changes", "carrier_up_count", "carrier_down_count"};
  return names;
}

std::vector<std::pair<std::string, std::string>> read_pcie_link(const Options& o, const std::string& bdf) {
  std::vector<std::pair<std::string, std::string>> out;
  if (bdf.empty()) return out;
  const std::string base = join_path(o.sys_root, "bus/pci/devices/" + bdf + "/");
  for (const char* f : {"current_link_speed", "current_link_width", "max_link_speed", "max_link_width"}) {
    std::string key = std::string("pcie_") + (f[0] == 'c' ? "" : "max_") + (std::string(f).find("speed") != std::string::npos ? "speed" : "width");
    out.emplace_back(key, or_unknown(read_line(base + f).value_or("")));
  }
  return out;
}

std::vector<NetdevFacts> read_netdevs_sysfs(const Options& o) {
  std::vector<NetdevFacts> out;
  const std::string base = join_path(o.sys_root, "class/net/");
  for (const auto& name : list_dir(base)) {
    if (name == "lo" || out.size() >= kMaxNetdevs) continue;
    const std::string d = base + name + "/";
    NetdevFacts n;
    n.name = name;
    if (exists(d + "bridge")) n.kind = "bridge";  // what sysfs says of the kinds netlink names
    else if (exists(d + "tun_flags")) n.kind = "tun";
    n.operstate = read_line(d + "operstate").value_or("");
    auto num = [&](const std::string& f) {
      auto v = read_line(d + f);  // speed reads "-1" (or fails) on a link without carrier
      try { return v && !v->empty() ? std::stoll(*v) : -1LL; } catch (...) { return -1LL; }
    };
    n.mtu = num("mtu");
    n.speed_mbps = num("speed");
    n.ifindex = num("ifindex");
    n.pci = pci_of_link(d + "device");
    n.driver = link_name(d + "device/driver");
    if (!n.driver.empty()) n.driver_version = read_line(join_path(o.sys_root, "module/" + n.driver + "/version")).value_or("");
    for (const auto& c : netdev_counter_names()) {
      auto v = read_u64(d + (c.rfind("carrier_", 0) == 0 ? c : "statistics/" + c));
      if (v) n.counters.emplace_back(c, *v);
    }
    out.push_back(std::move(n));
  }
  return out;
}

void read_inventory(const Options& o, const GpuSide* gpu, const RdmaSide* rdma,
                    std::vector<std::pair<std::string, std::string>>& config,
                    std::vector<std::pair<std::string, std::uint64_t>>& counters) {
  auto put = [&](const std::string& k, const std::string& v) { config.emplace_back(k, v); };
  // Netdevs: the live machine's through netlink (this namespace), a recorded tree's from sysfs.
  std::vector<NetdevFacts> nets;
  std::string why;
  if (o.sys_root != "/sys" || !read_netdevs_live(o, nets, why)) nets = read_netdevs_sysfs(o);
  for (const auto& n : nets) {
    if (software_netdev(n.kind)) continue;
    const std::string p = "net/" + n.name + "/";
    for (const auto& [c, v] : n.counters) counters.emplace_back(p + c, v);
    if (o.counters_only) continue;
    put(p + "operstate", or_unknown(n.operstate));
    put(p + "mtu", or_unknown(n.mtu));
    put(p + "speed_mbps", or_unknown(n.speed_mbps));
    put(p + "driver", or_unknown(n.driver.empty() ? n.kind : n.driver));
    put(p + "driver_version", or_unknown(n.driver_version));
    put(p + "firmware", or_unknown(n.firmware));
    if (!n.pci.empty())
      for (const auto& [k, v] : read_pcie_link(o, n.pci)) put(p + k, v);
  }
  read_tcp_counters(o, counters);
  // RDMA devices and their ports (sysfs is not namespaced for them by default).
  std::vector<HcaFacts> hcas;
  if (rdma) hcas = rdma->hcas;
  else for (const auto& d : rdma_device_names(o)) hcas.push_back(read_hca_sysfs(o, d));
  for (const auto& h : hcas) {
    const std::string dir = join_path(o.sys_root, "class/infiniband/" + h.name + "/");
    const std::string p = "ib/" + h.name + "/";
    if (!o.counters_only) {
      put(p + "fw_ver", or_unknown(read_line(dir + "fw_ver").value_or("")));
      std::string drv = link_name(dir + "device/driver");
      put(p + "driver", or_unknown(drv));
      if (!drv.empty()) put(p + "driver_version", or_unknown(read_line(join_path(o.sys_root, "module/" + drv + "/version")).value_or("")));
      for (const auto& [k, v] : read_pcie_link(o, h.pci)) put(p + k, v);
    }
    for (const auto& port : h.ports) {
      const std::string pp = p + std::to_string(port.port) + "/";
      if (!o.counters_only) {
        put(pp + "state", or_unknown(port.state));
        put(pp + "rate", or_unknown(port.rate));  // "100 Gb/sec (4X EDR)": rate and width
        put(pp + "active_mtu", port.active_mtu > 0 ? std::to_string(port.active_mtu) : kUnknown);
      }
      const std::string cdir = dir + "ports/" + std::to_string(port.port) + "/counters/";
      for (const char* c : kIbCounters)
        if (auto v = read_u64(cdir + c)) counters.emplace_back(pp + c, *v);
    }
  }
  if (o.counters_only || !gpu) return;
  // GPUs, numbered in bus-id order (identical nodes give the same numbering).
  put("gpu/driver_version", or_unknown(gpu->driver_version));
  std::set<std::string> ids(gpu->pci_gpus.begin(), gpu->pci_gpus.end());
  for (const auto& g : gpu->gpus)
    if (!g.bus_id.empty()) ids.insert(g.bus_id);
  int i = 0;
  for (const auto& id : ids) {
    const std::string p = fmt::format("gpu/{}/", i++);
    auto it = std::find_if(gpu->gpus.begin(), gpu->gpus.end(), [&](const GpuFacts& g) { return g.bus_id == id; });
    const GpuFacts none;
    const GpuFacts& g = it == gpu->gpus.end() ? none : *it;
    put(p + "name", or_unknown(g.name));
    put(p + "ecc", on_off(g.ecc));
    put(p + "persistence", on_off(g.persistence));
    put(p + "clock_sm_mhz", or_unknown(g.clock_sm_mhz));
    put(p + "clock_mem_mhz", or_unknown(g.clock_mem_mhz));
    for (const auto& [k, v] : read_pcie_link(o, id)) put(p + k, v);
  }
}

}  // namespace gdr::doctor::detail
