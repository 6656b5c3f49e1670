// --json FILE: one JSON object per case, the keys of src/case_fields.h.
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "case_fields.h"
#include "core/errors.h"
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

std::string json(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return num(x);
        else if constexpr (std::is_same_v<T, std::string>) return quoted(x);
        else if constexpr (std::is_same_v<T, Flows>) {
          std::string out;
          for (auto [a, b] : x) out += fmt::format("{}[{},{}]", out.empty() ? "" : ",", a, b);
          return "[" + out + "]";
        } else return "null";  // Unknown
      },
      v);
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
  // The keys of src/case_fields.h in its order; Unknown is null.
  void add(const CaseRecord& r) override {
    std::string line;
    for (const CaseField& f : case_fields()) {
      FieldValue v = field_value(f, r, kJsonl);
      if (std::holds_alternative<Omit>(v)) continue;
      line += fmt::format("{}\"{}\":{}", line.empty() ? "{" : ",", f.key, json(v));
    }
    line += "}\n";
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
