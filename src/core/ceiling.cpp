#include "ceiling.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gdr {
namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!in || !std::getline(in, s)) return {};
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

double pcie_gbps(double gts, int width) {
  if (!(gts > 0) || width <= 0) return 0;
  double per_lane = gts <= 5.0 ? gts * 8 / 10 / 8            // Gen1/2: 8b/10b
                  : gts <= 32.0 ? gts * 128 / 130 / 8        // Gen3-5: 128b/130b
                                : gts * 242 / 256 / 8;       // Gen6: FLIT
  return per_lane * width;
}

std::string pcie_gen(double gts) {
  if (gts <= 2.5) return "Gen1";
  if (gts <= 5) return "Gen2";
  if (gts <= 8) return "Gen3";
  if (gts <= 16) return "Gen4";
  if (gts <= 32) return "Gen5";
  return "Gen6";
}

std::optional<Ceiling> pcie_ceiling(const std::string& sys_root, const std::string& bdf,
                                    const std::string& what) {
  if (bdf.empty()) return std::nullopt;
  std::string dir = sys_root + "/bus/pci/devices/" + lower(bdf);
  std::string speed = first_line(dir + "/current_link_speed");
  std::string width = first_line(dir + "/current_link_width");
  double gts = std::strtod(speed.c_str(), nullptr);
  int w = std::atoi(width.c_str());
  double g = pcie_gbps(gts, w);
  if (!(g > 0)) return std::nullopt;
  return Ceiling{g, fmt::format("PCIe {} x{} of {} {} (sysfs): {:.1f} GB/s", pcie_gen(gts), w, what,
                                lower(bdf), g)};
}

double port_rate_gbps(const std::string& rate) {
  double gbit = std::strtod(rate.c_str(), nullptr);
  return gbit > 0 ? gbit / 8 : 0;
}

std::optional<Ceiling> hca_ceiling(const std::string& sys_root, const std::string& dev_port) {
  std::size_t colon = dev_port.rfind(':');
  std::string dev = dev_port.substr(0, colon);
  std::string port = colon == std::string::npos ? "1" : dev_port.substr(colon + 1);
  std::string base = sys_root + "/class/infiniband/" + dev;
  std::string rate = first_line(base + "/ports/" + port + "/rate");
  std::optional<Ceiling> best;
  if (double g = port_rate_gbps(rate); g > 0)
    best = Ceiling{g, fmt::format("{} port {} rate {} (sysfs): {:.2f} GB/s", dev, port, rate, g)};
  // The PCI function behind the device ("../../../0000:3b:00.0"); none for rxe/siw.
  std::error_code ec;
  std::string target = std::filesystem::read_symlink(base + "/device", ec).filename().string();
  if (!ec && !target.empty())
    if (auto p = pcie_ceiling(sys_root, target, "HCA " + dev); p && (!best || p->gbps < best->gbps)) best = p;
  return best;
}

Ceiling path_ceiling(const std::vector<std::string>& links, const std::string& sys_root,
                     const std::string& gpu_bdf, const std::map<std::string, double>& copy_gbps,
                     std::vector<std::string>* unknown) {
  Ceiling out;
  auto consider = [&](const Ceiling& c) {
    if (c.gbps > 0 && (out.gbps == 0 || c.gbps < out.gbps)) out = c;
  };
  auto gpu = [&]() -> std::optional<Ceiling> { return pcie_ceiling(sys_root, gpu_bdf, "GPU"); };
  for (const std::string& l : links) {
    if (auto it = copy_gbps.find(l); it != copy_gbps.end() && it->second > 0) {
      consider({it->second, fmt::format("{} row of this run at this size: {:.1f} GB/s", l, it->second)});
      continue;
    }
    std::optional<Ceiling> c;
    if (l == "gpu" || l == "copy-d2h" || l == "copy-h2d") c = gpu();
    else if (l.rfind("hca:", 0) == 0) c = hca_ceiling(sys_root, l.substr(4));
    if (c) consider(*c);
    else if (unknown && std::find(unknown->begin(), unknown->end(), l) == unknown->end())
      unknown->push_back(l);
  }
  return out;
}

std::size_t memcpy_class(std::size_t bytes) {
  std::size_t cls = 4096;
  while (cls < bytes && cls < (std::size_t{64} << 20)) cls *= 2;
  return cls;
}

double host_memcpy_gbps(std::size_t bytes, std::size_t* cls_out) {
  static std::mutex lock;
  static std::map<std::size_t, double> measured;
  const std::size_t cls = memcpy_class(bytes);
  if (cls_out) *cls_out = cls;
  std::lock_guard<std::mutex> hold(lock);
  if (auto it = measured.find(cls); it != measured.end()) return it->second;
  std::vector<char> src(cls, 1), dst(cls, 0);  // both touched: no page faults in the timed copies
  using clock = std::chrono::steady_clock;
  // Each timing copies at least 1 MiB (many copies of a small class) and the best of up to 8 counts;
  // stop after 3 once 20 ms have gone.
  const std::size_t copies = std::max<std::size_t>(1, (std::size_t{1} << 20) / cls);
  const auto start = clock::now();
  double best = 0;
  for (int rep = 0; rep < 8; ++rep) {
    const auto t0 = clock::now();
    for (std::size_t k = 0; k < copies; ++k) {
      std::memcpy(dst.data(), src.data(), cls);
      asm volatile("" : : "r"(dst.data()) : "memory");  // keep every copy
    }
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(copies * cls) / s / 1e9);
    if (rep >= 2 && clock::now() - start > std::chrono::milliseconds(20)) break;
  }
  measured[cls] = best;
  return best;
}

Ceiling memcpy_ceiling(double gbps, std::size_t cls) {
  if (!(gbps > 0)) return {};
  return {gbps, fmt::format("memcpy {:.1f} GB/s measured ({} B copies on rank 0; host shared memory copies "
                            "each byte at least once)", gbps, cls)};
}

}  // namespace gdr
