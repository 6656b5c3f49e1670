// --json FILE: one JSON object per case with a fixed set of keys.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "errors.h"
#include "results.h"

namespace gdr {
namespace {

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

class JsonlSink final : public ResultSink {
 public:
  explicit JsonlSink(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {
    if (!file_) throw UsageError(fmt::format("--json {}: cannot open for writing", path));
  }
  ~JsonlSink() override { std::fclose(file_); }
  void add(const CaseRecord& r) override {
    const CaseParams& c = r.params;
    fmt::print(file_,
               "{{\"test\":\"{}\",\"transport\":\"{}\",\"reference\":{},\"mem\":\"{}\",\"path\":\"{}\","
               "\"dtype\":\"{}\",\"op\":\"{}\",\"ranks\":{},\"bytes\":{},\"count\":{},\"iters\":{},"
               "\"time_us_mean\":{},\"time_us_min\":{},\"time_us_max\":{},\"algbw_gbps\":{},"
               "\"busbw_gbps\":{},\"wrong\":{}}}\n",
               c.test, c.transport, c.reference ? "true" : "false", mem_name(c.mem),
               path_name(c.path), c.has_dtype ? dtype_name(c.dtype) : "byte",
               c.has_dtype ? op_name(c.op) : "none", r.ranks, c.bytes, c.count, c.iters,
               num(r.slowest.mean * 1e6), num(r.slowest.min * 1e6), num(r.slowest.max * 1e6),
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
