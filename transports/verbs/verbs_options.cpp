#include "verbs_options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "src/core/errors.h"
#include "src/core/component_options.h"
#include "src/memory/cuda/cuda_options.h"

namespace gdr {
namespace {
std::optional<VerbsOptions>& stored() {
  static std::optional<VerbsOptions> o;
  return o;
}
}  // namespace

void set_verbs_options(const VerbsOptions& o) { stored() = o; }

VerbsOptions verbs_options() {
  if (stored()) return *stored();
  VerbsOptions o;
  if (const char* h = std::getenv("GDR_VERBS_HCA")) o.hca = h;
  if (const char* g = std::getenv("GDR_VERBS_GID_INDEX"); g && *g) {
    char* end = nullptr;
    long v = std::strtol(g, &end, 10);
    if (*end != '\0' || v < 0) throw UsageError("GDR_VERBS_GID_INDEX must be a number >= 0");
    o.gid_index = static_cast<int>(v);
  }
  if (const char* m = std::getenv("GDR_VERBS_MODE"); m && *m) o.mode = m;
  return o;
}

namespace {

// --hca, --gid-index, --verbs-mode as typed; empty / -1: not given.
VerbsOptions g_typed;

void add(CLI::App& run) {
  g_typed = VerbsOptions{};
  g_typed.mode.clear();
  run.add_option("--hca", g_typed.hca,
                 "verbs: RDMA device[:port] (default: closest to the rank's GPU, else first active)");
  run.add_option("--gid-index", g_typed.gid_index, "verbs: GID index (default: first RoCE v2 GID)");
  run.add_option("--verbs-mode", g_typed.mode,
                 "verbs: how data lands: imm (WRITE WITH IMM, receiver polls its CQ), write (plain "
                 "WRITEs, one immediate per window), poll (plain WRITEs, receiver polls the last "
                 "byte; device memory falls back to imm); default imm");
}

void validate() {
  const VerbsOptions& a = g_typed;
  if (a.gid_index < -1) throw UsageError(fmt::format("--gid-index {} must be 0 or more", a.gid_index));
  if (a.hca.find(':') != std::string::npos) {
    std::string port = a.hca.substr(a.hca.find(':') + 1);
    if (port.empty() || port.size() > 3 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) < 1)
      throw UsageError(fmt::format("--hca '{}': the port after ':' must be a number from 1", a.hca));
  }
  if (!a.mode.empty() && a.mode != "imm" && a.mode != "write" && a.mode != "poll")
    throw UsageError(fmt::format("--verbs-mode '{}': use imm, write or poll", a.mode));
}

// What was given overrides the environment's (GDR_VERBS_*); --device names
// the GPU whose closest HCA is the default.
void apply(Bootstrap&) {
  const int device = cuda::requested_device();
  if (g_typed.hca.empty() && g_typed.gid_index < 0 && device < 0 && g_typed.mode.empty()) return;
  VerbsOptions v = verbs_options();
  if (!g_typed.hca.empty()) v.hca = g_typed.hca;
  if (!g_typed.mode.empty()) v.mode = g_typed.mode;
  if (g_typed.gid_index >= 0) v.gid_index = g_typed.gid_index;
  if (device >= 0) v.cuda_device = device;
  set_verbs_options(v);
}

GDR_REGISTER_OPTIONS(reg_verbs_options, ::gdr::ComponentOptions::Owner::transport, "verbs", add, validate, apply);

}  // namespace
}  // namespace gdr
