// The verbs transport's settings (verbs_options.h): each flag with its
// environment twin, and the environment-only measuring switches, read by
// one parser with one set of bounds (src/core/component_options.h).
#include "verbs_options.h"

#include <cctype>

#include "src/core/component_options.h"

namespace gdr {
namespace {

using V = VerbsOptions;

// DEV or DEV:PORT, a device name of letters, digits, '_', '-', '.' and a
// port from 1 to 255 (ibv port numbers are 8 bits).
std::string parse_hca(std::string_view v, V& o) {
  std::string_view dev = v.substr(0, v.find(':'));
  const char* want = "want DEV or DEV:PORT (mlx5_0, rxe0:1)";
  if (dev.empty() || dev.size() > 64) return want;
  for (char c : dev)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return want;
  long long port = 0;
  if (dev.size() < v.size() && !setting::parse_whole(v.substr(dev.size() + 1), 1, 255, port)) return want;
  o.hca = std::string(v);
  return {};
}

// A measuring switch, on by default: 0 or 1.
Setting<V> toggle(const char* env, const char* help, int V::*m) {
  return {{"", env, help}, setting::whole(m, 0, 1)};
}

GDR_REGISTER_OPTIONS(reg_verbs_options, declare_options<V>(ComponentOptions::Owner::transport, "verbs", {
    {{"--hca", "GDR_VERBS_HCA", "verbs: RDMA device[:port] (default: closest to the rank's GPU, else first active)"},
     parse_hca},
    // 8 bits: ibv_global_route.sgid_index.
    {{"--gid-index", "GDR_VERBS_GID_INDEX", "verbs: GID index (default: first RoCE v2 GID)", "", "INT"},
     setting::whole(&V::gid_index, 0, 255)},
    {{"--verbs-mode", "GDR_VERBS_MODE",
      "verbs: how data lands: imm (WRITE WITH IMM, receiver polls its CQ), write (plain "
      "WRITEs, one immediate per window), poll (plain WRITEs, receiver polls the last "
      "byte; device memory falls back to imm); default imm"},
     setting::one_of(&V::mode, {"imm", "write", "poll"})},
    {{"", "GDR_VERBS_WAIT", "verbs: spin on the completion queue, or sleep on its channel"},
     setting::one_of(&V::wait, {"poll", "event"})},
    toggle("GDR_VERBS_INLINE", "verbs: inline small sends (measuring switch)", &V::inline_sends),
    toggle("GDR_VERBS_EAGER", "verbs: an inline send is complete once posted (measuring switch)", &V::eager),
    // At most half the send queue (256 work requests).
    {{"", "GDR_VERBS_SIGNAL_EVERY", "verbs: a send completion asked every N work requests (measuring switch)"},
     setting::whole(&V::signal_every, 1, 128)},
    toggle("GDR_VERBS_POSTLIST", "verbs: one doorbell per batch of sends (measuring switch)", &V::postlist),
    toggle("GDR_VERBS_RECV_BATCH", "verbs: repost receives in batches (measuring switch)", &V::recv_batch),
    {{"", "GDR_VERBS_YIELD", "verbs: yield the CPU on an empty poll of a software device (measuring switch)"},
     setting::whole(&V::yield, 0, 1)},
    {{"", "GDR_VERBS_RETRY_CNT", "verbs: queue-pair retry count"}, setting::whole(&V::retry_cnt, 0, 7)},
    {{"", "GDR_VERBS_QP_TIMEOUT", "verbs: queue-pair ack timeout exponent"}, setting::whole(&V::qp_timeout, 1, 31)},
}));

}  // namespace
}  // namespace gdr
