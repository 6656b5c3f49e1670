// Which transports UCX moves a message over, read from UCX itself.
//
// UCX with protocols v2 (the default from 1.15; the 1.22 wheel) answers per
// send: ucp_request_query's info string names the protocol and transports UCX
// chose for that very message, e.g.
//   {proto|init|rk_use} tag_send from cuda memory length 4194304
//   rendezvous zero-copy read from remote cuda_ipc/cuda 11214.5 MB/s 356.68 us
// (parse_send_info, path_from_send). UCX 1.13 (Debian 12's, and the GPU
// machine's 1.13.1-cuda) answers there with its v1 request flags and the am
// lane only, and has no query for the transports of an endpoint
// (UCP_EP_ATTR_FIELD_TRANSPORTS came in 1.14), so there the source is
// ucp_ep_print_info: the endpoint's lanes with their roles (am, am_bw#k,
// rma_bw#k) and the size thresholds of its tag protocols, e.g.
//   lane[1]:  5:cma/memory.0 md[4] -> md[4]/cma/sysdev[255] rma_bw#0
//   tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)
// and, for device memory, whether each lane's memory domain registers or
// accesses CUDA memory (uct_md_query). Pure parts are unit-tested on text
// printed by real UCX builds.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ucp/api/ucp.h>

#include "transports/transport.h"

namespace gdr::ucx {

struct EpLane {
  std::string tl, dev;  // "rc_mlx5", "mlx5_0:1"; "sysv", "memory"
  std::string md;       // the memory domain's component: "ib", "sysv", "cuda_ipc"
  bool am = false, am_bw = false, rma_bw = false;
  std::string name() const { return tl + "/" + dev; }
};

struct ProtoRange {
  std::size_t from = 0, to = 0;  // [from, to); to == SIZE_MAX for (inf)
  std::string proto;             // "egr/short", "egr/bcopy", "egr/zcopy", "rndv"
};

struct EpInfo {
  std::vector<EpLane> lanes;
  std::vector<ProtoRange> tag_send;  // from the "tag_send:" line
};

// Parses ucp_ep_print_info's text; lanes and ranges it cannot read are left out.
EpInfo parse_ep_info(std::string_view text);
// ucp_ep_print_info of `ep`, parsed.
EpInfo ep_info_of(ucp_ep_h ep);
// "sysv/memory,cma/memory": the endpoint's lanes, each once.
std::string lane_names(const EpInfo& info);

// The protocol UCX picks for `bytes` on this endpoint ("" when no range covers it).
std::string proto_at(const EpInfo& info, std::size_t bytes);

// What moves `bytes` of host (device == false) or CUDA memory over the
// endpoint. `reaches_cuda(lane)`: the lane's memory domain registers or
// accesses CUDA memory.
PathTaken path_for(const EpInfo& info, bool device, std::size_t bytes,
                   const std::function<bool(const EpLane&)>& reaches_cuda);

// One send as protocols v2 describe it in ucp_request_query's info string.
struct SendProto {
  std::string mem;    // "host", "cuda"
  std::size_t bytes = 0;
  std::string desc;   // "rendezvous zero-copy read from remote", "eager copy-in copy-out"
  std::vector<EpLane> lanes;  // the transports named, in order ("cuda_ipc/cuda")
};
// The info string parsed; nullopt when it is not in the v2 form (UCX 1.13's
// "flags:0x4001 send length 8 ???() lane[0]: ...").
std::optional<SendProto> parse_send_info(std::string_view text);
// The row covering `bytes` of the protocol table that UCX >= 1.15 prints in
// ucp_ep_print_info for "tagged message by ucp_tag_send* from <mem> memory",
// e.g. "|    256K..inf | (?) rendezvous zero-copy read from remote | cma/memory |";
// nullopt when the table or the row is not there (UCX fills it as sizes are used).
std::optional<SendProto> proto_table_row(std::string_view print_info, const std::string& mem, std::size_t bytes);
// ucp_ep_print_info of `ep` as text.
std::string ep_print(ucp_ep_h ep);

// What moved that send: eager or rendezvous, zero-copy or through a host
// buffer, over which transports. Device memory is direct only when the
// protocol is zero-copy on both sides and every transport reaches CUDA memory;
// a protocol it does not know leaves `unknown` set, never a guess.
PathTaken path_from_send(const SendProto& s, bool device,
                         const std::function<bool(const EpLane&)>& reaches_cuda);

// uct_md_query of the lane's memory domain in this process: CUDA in its
// reg_mem_types or access_mem_types. Cached per domain.
bool md_reaches_cuda(const EpLane& lane);

}  // namespace gdr::ucx
