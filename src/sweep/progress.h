// "case 12/96, 00:41 elapsed, about 02:50 left" on stderr, when it is a terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace gdr {

class Progress {
 public:
  Progress(bool enabled, std::size_t total)
      : enabled_(enabled && total > 1), total_(total), start_(std::chrono::steady_clock::now()) {}
  void step(std::size_t done) {
    if (!enabled_) return;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    double left = done ? el / done * (total_ - done) : 0;
    std::fprintf(stderr, "\r\033[Kcase %zu/%zu, %s elapsed, about %s left", done, total_,
                 mmss(el).c_str(), mmss(left).c_str());
    std::fflush(stderr);
  }
  // Clears the line so a table row printed next starts clean.
  void clear() {
    if (enabled_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  static std::string mmss(double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%02d:%02d", int(s) / 60, int(s) % 60);
    return b;
  }
  bool enabled_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gdr
