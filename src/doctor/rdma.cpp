// RDMA devices: sysfs for what it shows (state, link layer, rate, GIDs),
// libibverbs (opened with dlopen) for the active MTU and for the dma-buf
// probe, RLIMIT_MEMLOCK for registration limits.
#include <fmt/format.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/shared_library.h"
#include "doctor/facts.h"

#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define GDR_DOCTOR_VERBS_TYPES 1
#endif

namespace gdr::doctor::detail {

std::string rdma_core_from_soname(const std::string& file) {
  // rdma-core installs libibverbs.so.1.<abi>.<rdma-core major>.<minor>
  const std::string key = ".so.1.";
  auto pos = file.rfind(key);
  if (pos == std::string::npos) return {};
  std::string rest = file.substr(pos + key.size());  // "14.44.0"
  auto dot = rest.find('.');
  if (dot == std::string::npos) return {};
  rest = rest.substr(dot + 1);  // "44.0"
  if (rest.empty() || !std::isdigit(static_cast<unsigned char>(rest[0]))) return {};
  return rest;
}

namespace {

#ifdef GDR_DOCTOR_VERBS_TYPES
struct Verbs {
  SharedLibrary lib{"libibverbs.so.1"};
  ibv_device** (*get_list)(int*) = lib.sym<ibv_device** (*)(int*)>("ibv_get_device_list");
  void (*free_list)(ibv_device**) = lib.sym<void (*)(ibv_device**)>("ibv_free_device_list");
  const char* (*dev_name)(ibv_device*) = lib.sym<const char* (*)(ibv_device*)>("ibv_get_device_name");
  ibv_context* (*open)(ibv_device*) = lib.sym<ibv_context* (*)(ibv_device*)>("ibv_open_device");
  int (*close)(ibv_context*) = lib.sym<int (*)(ibv_context*)>("ibv_close_device");
  // The exported symbol fills the compat prefix of ibv_port_attr.
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*) =
      lib.sym<int (*)(ibv_context*, uint8_t, ibv_port_attr*)>("ibv_query_port");
  ibv_pd* (*alloc_pd)(ibv_context*) = lib.sym<ibv_pd* (*)(ibv_context*)>("ibv_alloc_pd");
  int (*dealloc_pd)(ibv_pd*) = lib.sym<int (*)(ibv_pd*)>("ibv_dealloc_pd");
  ibv_mr* (*reg_dmabuf)(ibv_pd*, uint64_t, size_t, uint64_t, int, int) =
      lib.sym<ibv_mr* (*)(ibv_pd*, uint64_t, size_t, uint64_t, int, int)>("ibv_reg_dmabuf_mr");
  int (*dereg)(ibv_mr*) = lib.sym<int (*)(ibv_mr*)>("ibv_dereg_mr");
};

int mtu_bytes(int e) { return (e >= 1 && e <= 5) ? (128 << e) : 0; }

const char* port_state(int s) {
  switch (s) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "NOP";
  }
}

// Does the kernel and provider accept dma-buf MRs? Registers nothing: an
// invalid fd (-1) is refused with EBADF by a stack that supports dma-buf and
// with EOPNOTSUPP by one that does not. Only a protection domain is created
// and destroyed.
void probe_dmabuf(const Verbs& v, ibv_context* ctx, HcaFacts& h) {
  if (!v.reg_dmabuf) {
    h.dmabuf_mr = 0;
    h.dmabuf_evidence = "libibverbs has no ibv_reg_dmabuf_mr";
    return;
  }
  if (!v.alloc_pd || !v.dealloc_pd) return;
  ibv_pd* pd = v.alloc_pd(ctx);
  if (!pd) {
    h.dmabuf_evidence = fmt::format("ibv_alloc_pd failed: {}", std::strerror(errno));
    return;
  }
  errno = 0;
  ibv_mr* mr = v.reg_dmabuf(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
  int err = errno;
  if (mr) {  // should not happen with fd -1; undo it
    if (v.dereg) v.dereg(mr);
    h.dmabuf_mr = 1;
    h.dmabuf_evidence = "ibv_reg_dmabuf_mr accepted the probe";
  } else if (err == EOPNOTSUPP || err == EPROTONOSUPPORT || err == ENOSYS) {
    h.dmabuf_mr = 0;
    h.dmabuf_evidence = fmt::format("ibv_reg_dmabuf_mr: {} (provider or kernel lacks dma-buf MRs)",
                                    std::strerror(err));
  } else {
    h.dmabuf_mr = 1;
    h.dmabuf_evidence =
        fmt::format("kernel accepts dma-buf MRs (probe with fd -1: {})", std::strerror(err));
  }
  v.dealloc_pd(pd);
}

void probe_verbs(RdmaSide& r) {
  Verbs v;
  if (!v.lib) {
    r.verbs_error = "libibverbs not loadable: " + v.lib.error();
    return;
  }
  if (!v.get_list || !v.free_list || !v.dev_name || !v.open || !v.close) {
    r.verbs_error = "libibverbs.so.1 lacks the device entry points";
    return;
  }
  r.verbs = true;
  r.reg_dmabuf_symbol = v.reg_dmabuf != nullptr;
  std::error_code ec;
  auto real = std::filesystem::canonical(v.lib.path("ibv_get_device_list"), ec);
  if (!ec) r.rdma_core_version = rdma_core_from_soname(real.filename().string());

  int n = 0;
  ibv_device** list = v.get_list(&n);
  if (!list) {
    r.verbs_error = fmt::format("ibv_get_device_list: {}", std::strerror(errno));
    return;
  }
  for (int i = 0; i < n; ++i) {
    const char* name = v.dev_name(list[i]);
    if (!name) continue;
    HcaFacts* h = nullptr;
    for (auto& x : r.hcas)
      if (x.name == name) h = &x;
    if (!h) {  // listed by verbs but not in (the injected) sysfs
      r.hcas.emplace_back();
      h = &r.hcas.back();
      h->name = name;
    }
    h->listed = true;
    ibv_context* ctx = v.open(list[i]);
    if (!ctx) {
      h->open_error = fmt::format("ibv_open_device: {}", std::strerror(errno));
      continue;
    }
    for (auto& p : h->ports) {
      ibv_port_attr attr;
      std::memset(&attr, 0, sizeof attr);
      if (v.query_port && v.query_port(ctx, static_cast<uint8_t>(p.port), &attr) == 0) {
        p.active_mtu = mtu_bytes(attr.active_mtu);
        if (p.state.empty()) p.state = port_state(attr.state);
        if (p.link_layer.empty())
          p.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
      }
    }
    probe_dmabuf(v, ctx, *h);
    v.close(ctx);
  }
  v.free_list(list);
}
#else
void probe_verbs(RdmaSide& r) {
  r.verbs_error = "gdrbench was built without <infiniband/verbs.h>";
}
#endif

}  // namespace

RdmaSide probe_rdma(const Options& o) {
  RdmaSide r;
  for (const auto& d : rdma_device_names(o)) r.hcas.push_back(read_hca_sysfs(o, d));
  if (o.probe_libraries) probe_verbs(r);
  else r.verbs_error = "libraries not probed";

  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    r.memlock_unlimited = rl.rlim_cur == RLIM_INFINITY;
    r.memlock_bytes = rl.rlim_cur;
  }
  r.cap_ipc_lock = has_cap_ipc_lock(o);
  return r;
}

}  // namespace gdr::doctor::detail
