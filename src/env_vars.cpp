#include "env_vars.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "core/errors.h"
#include "core/sizes.h"

namespace gdr {

bool parse_whole(std::string_view text, long long lo, long long hi, long long& out) {
  if (text.empty() || text.size() > 18) return false;
  long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

namespace {

template <long long Lo, long long Hi>
std::string whole(std::string_view v) {
  long long x;
  return parse_whole(v, Lo, Hi, x) ? "" : fmt::format("want a whole number from {} to {}", Lo, Hi);
}

// As --stage-chunk: a size with K/M/G, from 4 KiB (one page) to 1 GiB.
std::string stage_chunk(std::string_view v) {
  try {
    std::size_t n = parse_size(v, "GDR_STAGE_CHUNK");
    if (n < 4096 || n > (std::size_t(1) << 30)) return "want a size from 4K to 1G";
  } catch (const UsageError&) {
    return "want a size such as 512K or 4M (K, M, G are powers of 1024)";
  }
  return {};
}

// As --hca: DEV or DEV:PORT, a device name of letters, digits, '_', '-', '.'.
std::string hca(std::string_view v) {
  std::string_view dev = v.substr(0, v.find(':'));
  const char* want = "want DEV or DEV:PORT (mlx5_0, rxe0:1)";
  if (dev.empty() || dev.size() > 64) return want;
  for (char c : dev)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return want;
  if (dev.size() < v.size()) {
    long long port;
    if (!parse_whole(v.substr(dev.size() + 1), 1, 255, port)) return want;
  }
  return {};
}

// A flag: set means on.
std::string flag(std::string_view v) { return v == "1" ? "" : "want 1 (or leave it unset)"; }

std::string folder(std::string_view v) {
  std::error_code ec;
  return std::filesystem::is_directory(std::string(v), ec) ? "" : "want an existing folder";
}

std::string program(std::string_view v) {
  std::string p(v);
  if (p.find('/') == std::string::npos) return {};  // found through PATH when run
  return access(p.c_str(), X_OK) == 0 ? "" : "want an executable python3";
}

std::string verbs_mode(std::string_view v) {
  return v == "imm" || v == "write" || v == "poll" ? "" : "want imm, write or poll";
}
std::string timer(std::string_view v) { return v == "auto" || v == "tsc" || v == "clock" ? "" : "want auto, tsc or clock"; }
std::string verbs_wait(std::string_view v) { return v == "poll" || v == "event" ? "" : "want poll or event"; }

constexpr EnvVar kVars[] = {
    {"GDR_TIMER", "the clock of timed intervals (auto: the TSC where clock_gettime is a syscall)", timer},
    {"GDR_STAGE_CHUNK", "staged path: bytes per pinned host chunk", stage_chunk},
    {"GDR_STAGE_SLOTS", "staged path: pinned chunks in flight per peer and direction", whole<2, 1024>},
    {"GDR_UCX_CUDA_MAX_SENDS", "ucx: device-memory sends in flight per peer (0 = no cap)",
     whole<0, 1000000>},
    {"GDR_UCX_PASS_MEMH", "ucx: pass the registration handle on operations (0 or 1; UCX API >= 1.15)", whole<0, 1>},
    {"GDR_VERBS_MODE", "verbs: --verbs-mode when not given", verbs_mode},
    {"GDR_VERBS_WAIT", "verbs: spin on the completion queue, or sleep on its channel", verbs_wait},
    {"GDR_VERBS_INLINE", "verbs: inline small sends (measuring switch)", whole<0, 1>},
    {"GDR_VERBS_EAGER", "verbs: an inline send is complete once posted (measuring switch)", whole<0, 1>},
    {"GDR_VERBS_SIGNAL_EVERY", "verbs: a send completion asked every N work requests (measuring switch)",
     whole<1, 128>},
    {"GDR_VERBS_POSTLIST", "verbs: one doorbell per batch of sends (measuring switch)", whole<0, 1>},
    {"GDR_VERBS_RECV_BATCH", "verbs: repost receives in batches (measuring switch)", whole<0, 1>},
    {"GDR_VERBS_YIELD", "verbs: yield the CPU on an empty poll of a software device (measuring switch)", whole<0, 1>},
    {"GDR_VERBS_HCA", "verbs: RDMA device when --hca is not given", hca},
    {"GDR_WAIT_YIELD", "concurrent patterns: waits yield the CPU (1) or spin (0); default: yield when oversubscribed",
     whole<0, 1>},
    {"GDR_VERBS_GID_INDEX", "verbs: GID index when --gid-index is not given", whole<0, 65535>},
    {"GDR_VERBS_RETRY_CNT", "verbs: queue-pair retry count", whole<0, 7>},
    {"GDR_VERBS_QP_TIMEOUT", "verbs: queue-pair ack timeout exponent", whole<1, 31>},
    {"GDR_SELFTEST_FAIL_RANK", "self-test: this rank fails as the second case starts",
     whole<0, 1000000>},
    {"GDR_SELFTEST_CORRUPT", "self-test: corrupt one byte per case", flag},
    {"GDR_ANALYSIS_DIR", "analysis: the folder that holds gdranalysis/", folder},
    {"GDR_PYTHON", "analysis: the python3 to run it with", program},
};

}  // namespace

std::span<const EnvVar> env_vars() { return kVars; }

std::string env_value_problem(std::string_view name, std::string_view value) {
  for (const EnvVar& e : kVars)
    if (name == e.name) {
      std::string why = e.check(value);
      if (why.empty()) return {};
      // Quoted and cut: the value may hold anything, newlines included.
      std::string shown;
      for (char c : value.substr(0, 40)) shown += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
      return fmt::format("environment {}='{}'{}: {} ({})", e.name, shown, value.size() > 40 ? "..." : "",
                         why, e.want);
    }
  return {};
}

std::string environment_problem() {
  for (const EnvVar& e : kVars)
    if (const char* v = std::getenv(e.name); v && *v)  // empty: as unset
      if (std::string why = env_value_problem(e.name, v); !why.empty()) return why;
  return {};
}

}  // namespace gdr
