// The live machine's netdevs as this process's network namespace sees them: netlink
// (RTM_GETLINK: name, MTU, state, carrier changes, 64-bit statistics) and the ethtool ioctl
// (driver, its version, firmware, bus, speed). sysfs's class/net shows the namespace that
// mounted /sys, which under `nsenter --net` (an emulated host, a container) is another one's.
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "doctor/facts.h"

namespace gdr::doctor::detail {
namespace {

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { if (fd >= 0) close(fd); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

const char* operstate_name(unsigned s) {
  static const char* names[] = {"unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"};
  return s < 7 ? names[s] : "unknown";
}

void ethtool_facts(int sock, NetdevFacts& n) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, n.name.c_str(), IFNAMSIZ - 1);
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifr.ifr_data = reinterpret_cast<char*>(&info);
  if (ioctl(sock, SIOCETHTOOL, &ifr) == 0) {
    n.driver = info.driver;
    n.driver_version = info.version;
    n.firmware = info.fw_version;
    if (n.firmware == "N/A") n.firmware.clear();
    n.pci = normalize_busid(info.bus_info);
  }
  ethtool_cmd cmd{};  // ETHTOOL_GSET: deprecated, but every driver answers it
  cmd.cmd = ETHTOOL_GSET;
  ifr.ifr_data = reinterpret_cast<char*>(&cmd);
  if (ioctl(sock, SIOCETHTOOL, &ifr) == 0) {
    unsigned speed = ethtool_cmd_speed(&cmd);
    if (speed != 0 && speed != static_cast<unsigned>(SPEED_UNKNOWN) && speed != 0xffff) n.speed_mbps = speed;
  }
}

void parse_link(const nlmsghdr* h, std::vector<NetdevFacts>& out) {
  auto* ifi = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
  if (ifi->ifi_flags & IFF_LOOPBACK) return;
  NetdevFacts n;
  n.ifindex = ifi->ifi_index;
  int len = static_cast<int>(h->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof *ifi));
  for (auto* a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    const void* d = RTA_DATA(a);
    const size_t dl = RTA_PAYLOAD(a);
    auto u32 = [&] { uint32_t v = 0; std::memcpy(&v, d, std::min(dl, sizeof v)); return v; };
    switch (a->rta_type) {
      case IFLA_IFNAME: n.name.assign(static_cast<const char*>(d), strnlen(static_cast<const char*>(d), dl)); break;
      case IFLA_MTU: n.mtu = u32(); break;
      case IFLA_OPERSTATE: n.operstate = operstate_name(*static_cast<const uint8_t*>(d)); break;
      case IFLA_CARRIER_CHANGES: n.counters.emplace_back("carrier_changes", u32()); break;
      case 47: n.counters.emplace_back("carrier_up_count", u32()); break;    // IFLA_CARRIER_UP_COUNT (4.16)
      case 48: n.counters.emplace_back("carrier_down_count", u32()); break;  // IFLA_CARRIER_DOWN_COUNT
      case IFLA_STATS64: {
        rtnl_link_stats64 s{};
        std::memcpy(&s, d, std::min(dl, sizeof s));
        n.counters.emplace_back("rx_dropped", s.rx_dropped);
        n.counters.emplace_back("tx_dropped", s.tx_dropped);
        n.counters.emplace_back("rx_errors", s.rx_errors);
        n.counters.emplace_back("tx_errors", s.tx_errors);
        n.counters.emplace_back("rx_crc_errors", s.rx_crc_errors);
        n.counters.emplace_back("rx_missed_errors", s.rx_missed_errors);
        n.counters.emplace_back("tx_carrier_errors", s.tx_carrier_errors);
        break;
      }
      case IFLA_LINKINFO: {
        int il = static_cast<int>(dl);
        for (auto* b = static_cast<const rtattr*>(d); RTA_OK(b, il); b = RTA_NEXT(b, il))
          if (b->rta_type == IFLA_INFO_KIND)
            n.kind.assign(static_cast<const char*>(RTA_DATA(b)), strnlen(static_cast<const char*>(RTA_DATA(b)), RTA_PAYLOAD(b)));
        break;
      }
      default: break;
    }
  }
  if (!n.name.empty()) out.push_back(std::move(n));
}

}  // namespace

bool read_netdevs_live(const Options&, std::vector<NetdevFacts>& out, std::string& error) {
  Fd nl(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (nl.fd < 0) {
    error = std::string("netlink socket: ") + std::strerror(errno);
    return false;
  }
  struct {
    nlmsghdr h;
    ifinfomsg i;
  } req{};
  req.h.nlmsg_len = NLMSG_LENGTH(sizeof req.i);
  req.h.nlmsg_type = RTM_GETLINK;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 1;
  req.i.ifi_family = AF_UNSPEC;
  timeval tv{2, 0};
  setsockopt(nl.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (send(nl.fd, &req, req.h.nlmsg_len, 0) < 0) {
    error = std::string("netlink send: ") + std::strerror(errno);
    return false;
  }
  std::vector<char> buf(1 << 16);
  std::vector<NetdevFacts> found;
  for (int guard = 0; guard < 1000; ++guard) {  // a dump ends with NLMSG_DONE
    ssize_t got = recv(nl.fd, buf.data(), buf.size(), 0);
    if (got <= 0) {
      error = std::string("netlink recv: ") + (got < 0 ? std::strerror(errno) : "closed");
      return false;
    }
    int left = static_cast<int>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) {
        Fd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        std::sort(found.begin(), found.end(), [](const NetdevFacts& a, const NetdevFacts& b) { return a.name < b.name; });
        if (found.size() > 64) found.resize(64);
        for (auto& n : found)
          if (sock.fd >= 0) ethtool_facts(sock.fd, n);
        out = std::move(found);
        return true;
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        error = "netlink: RTM_GETLINK refused";
        return false;
      }
      if (h->nlmsg_type == RTM_NEWLINK) parse_link(h, found);
    }
  }
  error = "netlink: no end to the link dump";
  return false;
}

}  // namespace gdr::doctor::detail
