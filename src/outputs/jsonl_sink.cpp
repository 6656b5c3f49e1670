// --json FILE: one JSON object per case, the keys of src/record/case_fields.h.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "record/case_fields.h"
#include "core/errors.h"
#include "record/results.h"
#include "core/signals.h"
#include "core/shell_quote.h"
#include "record/json_text.h"
#include "outputs/redaction.h"

namespace gdr {
namespace {

std::string json(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return json_number(x);
        else if constexpr (std::is_same_v<T, std::string>) return json_string(x);
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
  // Opened without blocking (a FIFO nobody reads fails at once, ENXIO, where
  // a blocking open would wait forever); O_EXCL never replaces a file that
  // appeared since the up-front check. Writes wait at most `timeout` s.
  JsonlSink(const std::string& path, bool force, double timeout) : path_(path), timeout_(timeout) {
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), 0644);
    if (fd_ < 0 && errno == ENXIO)
      throw UsageError(fmt::format("--json {}: a FIFO that nothing reads; start its reader first",
                                   shell_quote(path)));
    if (fd_ < 0)
      throw UsageError(fmt::format("--json {}: cannot open for writing ({})", shell_quote(path),
                                   std::strerror(errno)));
  }
  ~JsonlSink() override {
    if (fd_ >= 0) ::close(fd_);
  }
  // The keys of src/record/case_fields.h in its order; Unknown is null.
  void add(const CaseRecord& r) override {
    std::string line;
    for (const CaseField& f : case_fields()) {
      FieldValue v = field_value(f, r, kJsonl);
      if (std::holds_alternative<Omit>(v)) continue;
      line += fmt::format("{}\"{}\":{}", line.empty() ? "{" : ",", f.key, json(v));
    }
    line += "}\n";
    // Written row by row (a run that dies keeps its rows), and checked: a
    // full disk is a failed run, never a silent loss.
    write_all(redact(line));
  }
  void event(const std::string& object) override { write_all(redact(object) + "\n"); }
  void end(const RunMetadata&) override {
    if (fd_ < 0) return;
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close");
  }

 private:
  // A pipe or FIFO whose reader stopped reading: wait for room under the
  // run's --timeout, then fail (never block the run forever).
  void write_all(std::string_view data) {
    Deadline deadline(timeout_);
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n > 0) {
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) fail("write");
      if (deadline.expired())
        throw RunError(fmt::format("rank 0: --json {}: write blocked for {:g} s (--timeout): its reader "
                                   "stopped reading", shell_quote(path_), timeout_));
      throw_if_interrupted();
      pollfd p{fd_, POLLOUT, 0};
      poll(&p, 1, 100);
    }
  }
  [[noreturn]] void fail(const char* call) {
    int err = errno;
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    throw RunError(fmt::format("rank 0: --json {}: {} failed: {}", shell_quote(path_), call, std::strerror(err)));
  }
  std::string path_;
  double timeout_;
  int fd_ = -1;
};

}  // namespace

std::unique_ptr<ResultSink> make_jsonl_sink(const std::string& path, bool force, double timeout) {
  return std::make_unique<JsonlSink>(path, force, timeout);
}

}  // namespace gdr
