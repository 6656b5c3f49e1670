#include "verbs_options.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "../../src/errors.h"

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

}  // namespace gdr
