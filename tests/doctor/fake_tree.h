// A throw-away directory tree standing in for /sys and /proc in tests.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gdr::doctor::test {

#ifdef GDR_DOCTOR_TEST_DATA
// The /sys and /proc of a node recorded under tests/doctor/data/<name>, no library probed.
template <class Options>
Options recorded_tree(const std::string& name) {
  Options o;
  const std::string top = std::string(GDR_DOCTOR_TEST_DATA) + "/" + name;
  o.sys_root = top + "/sys";
  o.proc_root = top + "/proc";
  o.probe_libraries = false;
  return o;
}
#endif

class FakeTree {
 public:
  FakeTree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gdr-doctor-XXXXXX").string();
    root_ = mkdtemp(tmpl.data());
  }
  ~FakeTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  const std::string& root() const { return root_; }
  std::string sys() const { return root_ + "/sys"; }
  std::string proc() const { return root_ + "/proc"; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  // Writes a file (creating its folders). `rel` is relative to the tree.
  void write(const std::string& rel, const std::string& content) const {
    auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  void mkdir(const std::string& rel) const { std::filesystem::create_directories(path(rel)); }
  // A symlink at `rel` pointing to `target` (relative, as sysfs writes them).
  void link(const std::string& rel, const std::string& target) const {
    auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::create_directory_symlink(target, p);
  }

 private:
  std::string root_;
};

}  // namespace gdr::doctor::test
