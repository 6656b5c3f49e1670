// GPU-to-HCA distance in the classes of `nvidia-smi topo -m`, from hwloc:
//   PIX  at most one PCIe switch between them (both below one PCI bridge,
//        each at most one bridge further down)
//   PXB  several PCIe bridges, but not the host bridge
//   PHB  through a PCIe host bridge (the CPU's root complex)
//   NODE between host bridges within one NUMA node / socket
//   SYS  across the SMP interconnect between sockets (UPI, xGMI)
// Plus what sits on the path: ACS redirection on its bridges and the IOMMU
// mode of both ends.
#include <hwloc.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doctor/facts.h"

namespace gdr::doctor::detail {
namespace {

hwloc_topology_t T(void* p) { return static_cast<hwloc_topology_t>(p); }

bool is_host_bridge(hwloc_obj_t o) {
  return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}
bool is_pci_bridge(hwloc_obj_t o) {
  return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}
std::string busid_of(hwloc_obj_t o) {
  const auto& p = o->attr->pcidev;  // also valid for PCI-PCI bridges (upstream side)
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", p.domain, p.bus, p.dev, p.func);
}

hwloc_obj_t find_pci(hwloc_topology_t t, const std::string& bdf) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bdf.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return nullptr;
  hwloc_obj_t o = nullptr;
  while ((o = hwloc_get_next_pcidev(t, o)))
    if (o->attr->pcidev.domain == dom && o->attr->pcidev.bus == bus &&
        o->attr->pcidev.dev == dev && o->attr->pcidev.func == fn)
      return o;
  // PCI-PCI bridges carry a bus id too (a GPU behind its own bridge is not
  // one, but an HCA's parent may be named).
  while ((o = hwloc_get_next_bridge(t, o)))
    if (is_pci_bridge(o) && busid_of(o) == bdf) return o;
  return nullptr;
}

bool within_package_or_one_node(hwloc_obj_t o) {
  for (hwloc_obj_t a = o; a; a = a->parent)
    if (a->type == HWLOC_OBJ_PACKAGE) return true;
  return o->nodeset && hwloc_bitmap_weight(o->nodeset) <= 1;
}

}  // namespace

const char* to_string(PciClass c) {
  switch (c) {
    case PciClass::PIX: return "PIX";
    case PciClass::PXB: return "PXB";
    case PciClass::PHB: return "PHB";
    case PciClass::NODE: return "NODE";
    case PciClass::SYS: return "SYS";
    default: return "unknown";
  }
}

Topology::Topology(const std::string& xml_path) {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) {
    error_ = "hwloc_topology_init failed";
    return;
  }
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
  // hwloc's GPU plugins would initialize CUDA/NVML/OpenCL inside this
  // process; the doctor reads those itself.
  for (const char* c : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"})
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, c);
  if (!xml_path.empty() && hwloc_topology_set_xml(t, xml_path.c_str()) != 0) {
    error_ = fmt::format("hwloc cannot read {}", xml_path);
    hwloc_topology_destroy(t);
    return;
  }
  if (hwloc_topology_load(t) != 0) {
    error_ = "hwloc_topology_load failed";
    hwloc_topology_destroy(t);
    return;
  }
  topo_ = t;
}

Topology::~Topology() {
  if (topo_) hwloc_topology_destroy(T(topo_));
}

std::string Topology::nic_near_binding(std::string& why) const {
  if (!topo_) {
    why = error_;
    return {};
  }
  hwloc_bitmap_t bind = hwloc_bitmap_alloc();
  std::vector<std::string> near;
  if (hwloc_get_cpubind(T(topo_), bind, HWLOC_CPUBIND_PROCESS) != 0) {
    why = "hwloc_get_cpubind failed";
  } else {
    for (hwloc_obj_t os = nullptr; (os = hwloc_get_next_osdev(T(topo_), os));) {
      if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !os->name) continue;
      hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(T(topo_), os);
      if (cpu_side && cpu_side->cpuset && hwloc_bitmap_isincluded(bind, cpu_side->cpuset)) near.push_back(os->name);
    }
    char* text = nullptr;
    hwloc_bitmap_list_asprintf(&text, bind);
    if (near.size() != 1)
      why = fmt::format("{} RDMA NICs local to CPUs {}", near.empty() ? "no" : fmt::format("{}", near.size()),
                        text ? text : "?");
    std::free(text);
  }
  hwloc_bitmap_free(bind);
  return near.size() == 1 ? near[0] : std::string();
}

std::string Topology::nic_near_pci(const std::string& bdf, std::string& why) const {
  if (!topo_) {
    why = error_;
    return {};
  }
  if (!find_pci(T(topo_), bdf)) {
    why = fmt::format("{} is not in the topology", bdf);
    return {};
  }
  PciClass best = PciClass::Unknown;
  std::vector<std::string> nearest;
  for (hwloc_obj_t os = nullptr; (os = hwloc_get_next_osdev(T(topo_), os));) {
    if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !os->name || !os->parent ||
        os->parent->type != HWLOC_OBJ_PCI_DEVICE)
      continue;
    const PciClass c = classify(bdf, busid_of(os->parent));
    if (c < best) nearest.clear(), best = c;
    if (c == best && c != PciClass::Unknown) nearest.push_back(os->name);
  }
  if (nearest.size() == 1 && best <= PciClass::PHB) return nearest[0];
  why = nearest.empty() ? fmt::format("no RDMA NIC on PCIe beside {}", bdf)
        : nearest.size() > 1 ? fmt::format("{} RDMA NICs ({}) equally near {} ({})", nearest.size(),
                                            fmt::join(nearest, ","), bdf, to_string(best))
                             : fmt::format("the nearest RDMA NIC {} is {} to {}, beyond its root complex",
                                           nearest[0], to_string(best), bdf);
  return {};
}

bool Topology::has_pci(const std::string& bdf) const {
  return topo_ && find_pci(T(topo_), bdf) != nullptr;
}

PciClass Topology::classify(const std::string& a, const std::string& b,
                            std::vector<std::string>* bridges) const {
  if (!topo_) return PciClass::Unknown;
  hwloc_obj_t oa = find_pci(T(topo_), a), ob = find_pci(T(topo_), b);
  if (!oa || !ob) return PciClass::Unknown;
  if (oa == ob) return PciClass::PIX;

  std::vector<hwloc_obj_t> up_a;
  for (hwloc_obj_t x = oa; x; x = x->parent) up_a.push_back(x);
  hwloc_obj_t common = nullptr;
  std::vector<hwloc_obj_t> up_b;
  for (hwloc_obj_t x = ob; x; x = x->parent) {
    if (std::find(up_a.begin(), up_a.end(), x) != up_a.end()) {
      common = x;
      break;
    }
    up_b.push_back(x);
  }
  if (!common) return PciClass::Unknown;

  // Bridges strictly below the common ancestor, on each side.
  int n_a = 0, n_b = 0;
  auto note = [&](hwloc_obj_t x, int& n) {
    if (x->type != HWLOC_OBJ_BRIDGE) return;
    ++n;
    if (bridges && is_pci_bridge(x)) bridges->push_back(busid_of(x));
  };
  for (hwloc_obj_t x : up_a) {
    if (x == common) break;
    note(x, n_a);
  }
  for (hwloc_obj_t x : up_b) note(x, n_b);
  if (bridges && is_pci_bridge(common)) bridges->push_back(busid_of(common));

  if (is_pci_bridge(common)) return (n_a <= 1 && n_b <= 1) ? PciClass::PIX : PciClass::PXB;
  if (is_host_bridge(common)) return PciClass::PHB;
  if (common->type == HWLOC_OBJ_PCI_DEVICE) return PciClass::PIX;
  return within_package_or_one_node(common) ? PciClass::NODE : PciClass::SYS;
}

TopoSide probe_topology(const Options& o, const std::vector<std::string>& gpus,
                        const std::vector<HcaFacts>& hcas) {
  TopoSide s;
  s.iommu = iommu_units(o);
  std::vector<const HcaFacts*> pci_hcas;
  for (const auto& h : hcas)
    if (!h.pci.empty()) pci_hcas.push_back(&h);
  for (const auto& g : gpus) s.iommu_types.emplace_back(g, iommu_group_type(o, g));
  for (const auto* h : pci_hcas) s.iommu_types.emplace_back(h->pci, iommu_group_type(o, h->pci));
  if (gpus.empty() || pci_hcas.empty()) {
    s.error = gpus.empty() ? "no GPU" : "no RDMA device on PCI";
    return s;
  }
  Topology t(o.topology_xml);
  if (!t.ok()) {
    s.error = t.error();
    return s;
  }
  s.loaded = true;
  std::vector<std::string> seen;
  for (const auto& g : gpus) {
    const Pairing* best = nullptr;
    size_t first = s.pairs.size();
    for (const auto* h : pci_hcas) {
      Pairing p{g, h->name, PciClass::Unknown, {}};
      p.cls = t.classify(g, h->pci, &p.bridges);
      s.pairs.push_back(std::move(p));
    }
    for (size_t i = first; i < s.pairs.size(); ++i)
      if (!best || s.pairs[i].cls < best->cls) best = &s.pairs[i];
    if (!best) continue;
    for (const auto& br : best->bridges) {
      if (std::find(seen.begin(), seen.end(), br) != seen.end()) continue;
      seen.push_back(br);
      s.acs.push_back(read_acs(o, br));
    }
  }
  return s;
}

}  // namespace gdr::doctor::detail
