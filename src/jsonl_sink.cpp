// --json FILE: one JSON object per case with a fixed set of keys.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "errors.h"
#include "results.h"

namespace gdr {
namespace {

// Shortest text that reads back as the same double: the JSON numbers equal
// the HDF5 attributes exactly.
std::string num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

class JsonlSink final : public ResultSink {
 public:
  explicit JsonlSink(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {
    if (!file_) throw UsageError(fmt::format("--json {}: cannot open for writing", path));
  }
  ~JsonlSink() override { std::fclose(file_); }
  void add(const CaseRecord& r) override {
    const CaseParams& c = r.params;
    // src/dst: the pair of a point-to-point row, null for collectives, so
    // every row has the same keys.
    const bool p2p = !c.has_dtype;
    fmt::print(file_,
               "{{\"test\":\"{}\",\"transport\":\"{}\",\"reference\":{},\"mem\":\"{}\",\"path\":\"{}\","
               "\"dtype\":\"{}\",\"op\":\"{}\",\"src\":{},\"dst\":{},\"ranks\":{},\"bytes\":{},"
               "\"count\":{},\"iters\":{},\"time_us_mean\":{},\"time_us_min\":{},\"time_us_max\":{},"
               "\"time_us_median\":{},\"time_us_p99\":{},\"algbw_gbps\":{},\"busbw_gbps\":{},"
               "\"wrong\":{}}}\n",
               c.test, c.transport, c.reference ? "true" : "false", mem_name(c.mem),
               path_name(c.path), p2p ? "byte" : dtype_name(c.dtype), p2p ? "none" : op_name(c.op),
               p2p ? std::to_string(c.src) : "null", p2p ? std::to_string(c.dst) : "null", r.ranks,
               c.bytes, c.count, c.iters, num(r.slowest.mean * 1e6), num(r.slowest.min * 1e6),
               num(r.slowest.max * 1e6), num(r.slowest.median * 1e6), num(r.slowest.p99 * 1e6),
               num(r.algbw_gbps), num(r.busbw_gbps), r.wrong);
    std::fflush(file_);
  }

 private:
  std::FILE* file_;
};

}  // namespace

std::unique_ptr<ResultSink> make_jsonl_sink(const std::string& path) {
  return std::make_unique<JsonlSink>(path);
}

}  // namespace gdr
