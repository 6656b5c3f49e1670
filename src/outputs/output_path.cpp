#include "outputs/output_path.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/shell_quote.h"

namespace gdr {
namespace {

namespace fs = std::filesystem;

// The first control byte (newline, tab, escape, DEL) in a name, or -1.
int control_byte(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return c;
  return -1;
}

// What kind of thing is at `path` when it is not a regular file: "" for a
// regular file or nothing there.
std::string odd_kind(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  return "not a regular file";
}

std::string folder_problem(const std::string& path, const char* option) {
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fmt::format("{} {}: folder {} does not exist", option, shell_quote(path), shell_quote(dir.string()));
  if (access(dir.c_str(), W_OK) != 0)
    return fmt::format("{} {}: folder {} is not writable ({})", option, shell_quote(path), shell_quote(dir.string()),
                       std::strerror(errno));
  return {};
}

}  // namespace

std::string check_output_path(const std::string& path, bool force, const char* option) {
  const std::string shown = shell_quote(path);
  if (int c = control_byte(path); c >= 0)
    return fmt::format("{} {}: the name holds a control character (0x{:02x}); choose a name without one",
                       option, shown, c);
  // Anything but a regular file is refused, --force included: HDF5 seeks
  // (a FIFO or device would hang or fail mid-run), and replacing a device
  // or a folder is never what was meant. --json streams: it takes a FIFO.
  const std::string kind = odd_kind(path);
  const bool stream = std::string_view(option) == "--json" && kind == "a FIFO";
  if (!kind.empty() && !stream)
    return fmt::format("{} {}: is {}, not a regular file; give a file name", option, shown, kind);
  std::error_code ec;
  if (kind.empty() && fs::exists(path, ec) && !force)
    return fmt::format("{} {}: file exists; pass --force to overwrite it", option, shown);
  if (stream && !force) return fmt::format("{} {}: file exists; pass --force to write into it", option, shown);
  return folder_problem(path, option);
}

std::string write_target(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    fs::path t = fs::read_symlink(p, ec);
    if (ec) break;
    p = t.is_absolute() ? t : p.parent_path() / t;
  }
  fs::path dir = fs::weakly_canonical(p.parent_path(), ec);
  return ((ec ? p.parent_path() : dir) / p.filename()).string();
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;  // hard links
  return write_target(a) == write_target(b);
}

std::string free_space_shortfall(const std::string& path, const char* option, std::uint64_t need) {
  fs::path dir = fs::path(write_target(path)).parent_path();
  struct statvfs v {};
  // Unknown, or a file system that counts no blocks (/proc, /sys): the writes will say.
  if (statvfs(dir.c_str(), &v) != 0 || v.f_blocks == 0) return {};
  const std::uint64_t have = std::uint64_t(v.f_bavail) * v.f_frsize;
  if (have >= need) return {};
  return fmt::format("{} {}: {} KiB free on its file system, and the run needs {} KiB before its first case "
                     "(a 4 MiB reserve for closing the file, and the first case's records); nothing was written",
                     option, shell_quote(path), have >> 10, (need + 1023) >> 10);
}

}  // namespace gdr
