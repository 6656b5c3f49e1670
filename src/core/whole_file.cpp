#include "core/whole_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/shell_quote.h"

namespace gdr {

std::string file_name_check(const std::string& name) {
  return name.empty() ? "an empty name; give a file name" : "";
}

std::string write_whole(const std::string& path, const std::string& text, const char* option) {
  std::error_code ec;
  std::filesystem::path target = std::filesystem::weakly_canonical(path, ec);
  if (ec) target = path;
  const std::string tmp =
      (target.parent_path() / fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid())).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("{} {}: cannot write beside it ({})", option, shell_quote(path), std::strerror(errno));
  size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), target.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    return fmt::format("{} {}: writing failed ({}); the file was left as it was", option, shell_quote(path),
                       std::strerror(err));
  }
  return "";
}

}  // namespace gdr
