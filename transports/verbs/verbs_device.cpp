#include "verbs_device.h"

#include <hwloc.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "src/core/errors.h"
#include "cuda_driver.h"
#include "verbs_logic.h"

namespace gdr::verbs {

DeviceContext::~DeviceContext() {
  if (pd) ibv_dealloc_pd(pd);
  if (ctx) ibv_close_device(ctx);
}

namespace {

// The device list, freed on scope exit.
struct DeviceList {
  ibv_device** list = nullptr;
  int n = 0;
  DeviceList() { list = ibv_get_device_list(&n); if (!list) n = 0; }
  ~DeviceList() { if (list) ibv_free_device_list(list); }
  ibv_device* find(const std::string& name) const {
    for (int i = 0; i < n; ++i)
      if (name == ibv_get_device_name(list[i])) return list[i];
    return nullptr;
  }
};

// The first ACTIVE port of `dev` (or `want` if nonzero and ACTIVE); 0 if none.
int active_port(ibv_context* ctx, int want, ibv_port_attr* attr_out) {
  ibv_device_attr dattr{};
  if (ibv_query_device(ctx, &dattr)) return 0;
  for (int p = 1; p <= dattr.phys_port_cnt; ++p) {
    if (want && p != want) continue;
    ibv_port_attr a{};
    if (ibv_query_port(ctx, p, &a) == 0 && a.state == IBV_PORT_ACTIVE) {
      if (attr_out) *attr_out = a;
      return p;
    }
  }
  return 0;
}

bool device_has_active_port(ibv_device* d) {
  ibv_context* ctx = ibv_open_device(d);
  if (!ctx) return false;
  bool ok = active_port(ctx, 0, nullptr) != 0;
  ibv_close_device(ctx);
  return ok;
}

// Hops between two hwloc objects through their closest common ancestor.
int hwloc_hops(hwloc_obj_t a, hwloc_obj_t b, std::string& via) {
  std::vector<hwloc_obj_t> up;
  for (hwloc_obj_t o = a; o; o = o->parent) up.push_back(o);
  int hops_b = 0;
  for (hwloc_obj_t o = b; o; o = o->parent, ++hops_b) {
    for (std::size_t i = 0; i < up.size(); ++i) {
      if (up[i] != o) continue;
      via = hwloc_obj_type_string(o->type);
      return static_cast<int>(i) + hops_b;
    }
  }
  return 1 << 20;
}

// Among devices with an ACTIVE port, the one fewest hwloc hops from the GPU.
std::string closest_to_gpu(const DeviceList& devs, const std::string& bus_id, std::string& path) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo)) return {};
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  std::string best;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_obj_t gpu = hwloc_get_pcidev_by_busidstring(topo, bus_id.c_str());
    int best_hops = 1 << 21;
    for (hwloc_obj_t os = nullptr; gpu && (os = hwloc_get_next_osdev(topo, os));) {
      if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !os->name) continue;
      ibv_device* d = devs.find(os->name);
      if (!d || !device_has_active_port(d)) continue;
      std::string via;
      int hops = hwloc_hops(gpu, os, via);
      if (hops < best_hops) {
        best_hops = hops;
        best = os->name;
        path = fmt::format("{} hops via {}", hops, via);
      }
    }
  }
  hwloc_topology_destroy(topo);
  return best;
}

void choose_gid_index(ibv_context* ctx, const VerbsOptions& opts, const std::string& who,
                      PortChoice& c) {
  if (opts.gid_index >= 0) {
    c.gid_index = opts.gid_index;
  } else if (c.ethernet) {
    auto dir = fmt::format("/sys/class/infiniband/{}/ports/{}", c.device, c.port);
    auto gid = choose_gid(read_gid_table(dir));
    if (!gid)
      throw RunError(fmt::format("{}: verbs: {} port {} is RoCE but has no GID (no IP "
                                 "address on its netdev?); pass --gid-index",
                                 who, c.device, c.port));
    c.gid_index = gid->index;
  }
  if (c.gid_index >= 0 && ibv_query_gid(ctx, c.port, c.gid_index, &c.gid))
    throw RunError(fmt::format("{}: verbs: ibv_query_gid({} port {} index {}): {}", who,
                               c.device, c.port, c.gid_index, std::strerror(errno)));
}

}  // namespace

const char* link_layer_name(bool ethernet) { return ethernet ? "Ethernet" : "InfiniBand"; }

std::string gid_text(const ibv_gid& g) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, g.raw, buf, sizeof buf);
  return buf;
}

std::string verbs_unavailable_reason() {
  DeviceList devs;
  if (devs.n == 0)
    return "no RDMA device (ibv_get_device_list found none: no HCA driver or rdma_rxe loaded)";
  std::string names;
  for (int i = 0; i < devs.n; ++i) {
    if (device_has_active_port(devs.list[i])) return {};
    names += fmt::format("{}{}", i ? ", " : "", ibv_get_device_name(devs.list[i]));
  }
  return fmt::format("no RDMA device has an ACTIVE port ({})", names);
}

std::shared_ptr<DeviceContext> open_device(const VerbsOptions& opts, int local_rank,
                                           const std::string& who, PortChoice& c) {
  DeviceList devs;
  if (devs.n == 0)
    throw RunError(fmt::format("{}: verbs: {}", who, verbs_unavailable_reason()));
  HcaSpec spec;
  if (!opts.hca.empty()) {
    spec = parse_hca(opts.hca);
    c.why = fmt::format("--hca {}", opts.hca);
  } else if (auto& cu = CudaDriver::get(); cu.loaded() && cu.device_count() > 0) {
    int gpu = opts.cuda_device >= 0 ? opts.cuda_device : local_rank % cu.device_count();
    std::string bus = cu.pci_bus_id(gpu);
    spec.device = closest_to_gpu(devs, bus, c.gpu_hca_path);
    if (!spec.device.empty()) c.why = fmt::format("closest to GPU {}", bus);
  }
  if (spec.device.empty()) {
    for (int i = 0; i < devs.n && spec.device.empty(); ++i)
      if (device_has_active_port(devs.list[i])) spec.device = ibv_get_device_name(devs.list[i]);
    if (spec.device.empty())
      throw RunError(fmt::format("{}: verbs: {}", who, verbs_unavailable_reason()));
    c.why = "first device with an ACTIVE port";
  }
  ibv_device* dev = devs.find(spec.device);
  if (!dev) throw RunError(fmt::format("{}: verbs: no RDMA device named {}", who, spec.device));

  auto dc = std::make_shared<DeviceContext>();
  dc->ctx = ibv_open_device(dev);
  if (!dc->ctx)
    throw RunError(fmt::format("{}: verbs: ibv_open_device({}): {}", who, spec.device,
                               std::strerror(errno)));
  ibv_port_attr pa{};
  c.device = spec.device;
  c.port = active_port(dc->ctx, spec.port, &pa);
  if (!c.port)
    throw RunError(fmt::format("{}: verbs: {} has no ACTIVE port{}", who, spec.device,
                               spec.port ? fmt::format(" {}", spec.port) : ""));
  c.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  c.lid = pa.lid;
  c.active_mtu = pa.active_mtu;
  c.max_msg_sz = pa.max_msg_sz;
  choose_gid_index(dc->ctx, opts, who, c);
  dc->pd = ibv_alloc_pd(dc->ctx);
  if (!dc->pd)
    throw RunError(fmt::format("{}: verbs: ibv_alloc_pd({}): {}", who, spec.device,
                               std::strerror(errno)));
  return dc;
}

}  // namespace gdr::verbs
