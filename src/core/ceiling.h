// The physical limit of the path a case used: the `%peak`
// column, `peak_gbps` / `pct_peak` in the files, the doctor's ceilings.
//
// Sources, all GB/s = 1e9 B/s of payload after line encoding (TLP/packet
// headers take a further few percent, so 90-95 % is a full link):
//  - PCIe: sysfs `current_link_speed` x `current_link_width` of the GPU or
//    HCA function; per lane 2.5/5 GT/s at 8b/10b, 8/16/32 GT/s at 128b/130b,
//    64 GT/s (Gen6) at 242/256 (FLIT).
//  - RDMA port: sysfs `ports/N/rate` ("100 Gb/sec (4X EDR)"), which the
//    kernel computes from the port's active speed x width (ibv_query_port's
//    values), / 8.
//  - copy engines: the copy-d2d/d2h/h2d rows of the same size in this run.
//  - host shared memory: a memcpy of the row's size class measured in this run.
// Stages in series: the slowest bounds the path.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gdr {

struct Ceiling {
  double gbps = 0;      // 0: unknown
  std::string source;   // "PCIe Gen4 x16 of GPU 0000:3b:00.0 (sysfs): 31.5 GB/s"
};

// Per lane and encoding: GB/s of a PCIe link at `gts` GT/s times `width`; 0 when unknown.
double pcie_gbps(double gts, int width);
// "Gen4" for 16 GT/s.
std::string pcie_gen(double gts);
// The link of PCI function `bdf` under `sys_root` (sysfs current_link_*).
std::optional<Ceiling> pcie_ceiling(const std::string& sys_root, const std::string& bdf,
                                    const std::string& what);
// "100 Gb/sec (4X EDR)" -> 12.5 GB/s; 0 when it cannot be read.
double port_rate_gbps(const std::string& rate);
// An RDMA port: its rate and, for a PCI device, the HCA's PCIe link; the
// smaller. `dev_port` is "mlx5_0:1".
std::optional<Ceiling> hca_ceiling(const std::string& sys_root, const std::string& dev_port);

// The ceiling of a path from its links (transports/transport.h PathTaken::links)
// on this rank: "gpu" (the GPU's PCIe link, `gpu_bdf`), "hca:dev:port";
// copy-* links use `copy_gbps` (copy rows measured so far at this size),
// copy-d2h/h2d falling back to the GPU's PCIe link. Unknown links (shm,
// tcp, an unmeasured copy-d2d) are listed in `unknown`.
Ceiling path_ceiling(const std::vector<std::string>& links, const std::string& sys_root,
                     const std::string& gpu_bdf, const std::map<std::string, double>& copy_gbps,
                     std::vector<std::string>* unknown);

// Host memory: the rate of one memcpy on this process at the size class of `bytes` (the power of
// two at or above it, 4 KiB to 64 MiB: small classes stay as cache-resident as the rows they bound,
// and above 64 MiB the copy runs at memory speed already), its best of a few repetitions, measured
// once a process and class (3 to 8 timings, each of at least 1 MiB of copies, about 20 ms a class;
// 64 MiB: 128 MiB held meanwhile). `cls` gets the class. The ceiling of a transfer through host
// shared memory, which copies each byte at least once.
std::size_t memcpy_class(std::size_t bytes);
double host_memcpy_gbps(std::size_t bytes, std::size_t* cls = nullptr);
Ceiling memcpy_ceiling(double gbps, std::size_t cls);  // "memcpy 12.3 GB/s measured (... B, rank 0)"

}  // namespace gdr
