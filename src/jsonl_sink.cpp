// --json FILE: one JSON object per case with a fixed set of keys.
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "errors.h"
#include "results.h"

namespace gdr {
namespace {

// Shortest text that reads back as the same double: the JSON numbers equal
// the HDF5 attributes exactly.
std::string num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

// A JSON string: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') out += fmt::format("\\{}", static_cast<char>(ch));
    else if (ch < 0x20) out += fmt::format("\\u{:04x}", ch);
    else out += static_cast<char>(ch);
  }
  return out + "\"";
}

class JsonlSink final : public ResultSink {
 public:
  // "wx" never replaces a file that appeared since the up-front check.
  JsonlSink(const std::string& path, bool force)
      : path_(path), file_(std::fopen(path.c_str(), force ? "w" : "wx")) {
    if (!file_)
      throw UsageError(fmt::format("--json {}: cannot open for writing ({})", path, std::strerror(errno)));
  }
  ~JsonlSink() override {
    if (file_) std::fclose(file_);
  }
  void add(const CaseRecord& r) override {
    const CaseParams& c = r.params;
    // src/dst: the pair of a point-to-point row, null for collectives, so
    // every such row has the same keys. A concurrent pattern's row has no one
    // pair: instead of src/dst it says which pattern, step and flows ran.
    const bool p2p = !c.has_dtype;
    std::string who = fmt::format("\"src\":{},\"dst\":{}", p2p ? std::to_string(c.src) : "null",
                                  p2p ? std::to_string(c.dst) : "null");
    if (!c.pattern.empty()) {
      std::string flows;
      for (auto [a, b] : c.flows) flows += fmt::format("{}[{},{}]", flows.empty() ? "" : ",", a, b);
      who = fmt::format("\"pattern\":{},\"step\":{},\"flows\":[{}]", quoted(c.pattern), c.step, flows);
    }
    std::string line = fmt::format(
        "{{\"test\":\"{}\",\"transport\":\"{}\",\"reference\":{},\"mem\":\"{}\",\"path\":\"{}\","
        "\"dtype\":\"{}\",\"op\":\"{}\",{},\"ranks\":{},\"bytes\":{},"
        "\"count\":{},\"iters\":{},\"time_us_mean\":{},\"time_us_min\":{},\"time_us_max\":{},"
        "\"time_us_median\":{},\"time_us_p99\":{},\"algbw_gbps\":{},\"busbw_gbps\":{},"
        "\"wrong\":{},\"path_taken\":{},\"via_host\":{},\"peak_gbps\":{},\"pct_peak\":{}}}\n",
        c.test, c.transport, c.reference ? "true" : "false", mem_name(c.mem), path_name(c.path),
        p2p ? "byte" : dtype_name(c.dtype), p2p ? "none" : op_name(c.op),
        who, r.ranks, c.bytes,
        c.count, c.iters, num(r.slowest.mean * 1e6), num(r.slowest.min * 1e6),
        num(r.slowest.max * 1e6), num(r.slowest.median * 1e6), num(r.slowest.p99 * 1e6),
        num(r.algbw_gbps), num(r.busbw_gbps), r.wrong, quoted(r.path_taken), r.via_host ? "true" : "false",
        r.peak_gbps > 0 ? num(r.peak_gbps) : "null", r.peak_gbps > 0 ? num(r.pct_peak) : "null");
    // Flushed row by row (a run that dies keeps its rows), and checked: a
    // full disk is a failed run, never a silent loss.
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
      fail("write");
  }
  void end(const RunMetadata&) override {
    if (!file_) return;
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) fail("close");
  }

 private:
  [[noreturn]] void fail(const char* call) {
    int err = errno;
    if (file_) {
      std::fclose(file_);
      file_ = nullptr;
    }
    throw RunError(fmt::format("rank 0: --json {}: {} failed: {}", path_, call, std::strerror(err)));
  }
  std::string path_;
  std::FILE* file_;
};

}  // namespace

std::unique_ptr<ResultSink> make_jsonl_sink(const std::string& path, bool force) {
  return std::make_unique<JsonlSink>(path, force);
}

}  // namespace gdr
