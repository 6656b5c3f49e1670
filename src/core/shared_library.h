// A shared library opened at run time, so that gdrbench starts on machines
// without the GPU driver, NVML, libibverbs, UCX or NCCL. The one loader of
// the doctor, the verbs transport's CUDA driver calls and the NCCL rows.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace gdr {

class SharedLibrary {
 public:
  // Tries each name in turn; the first that loads wins. error() says why
  // none did.
  SharedLibrary(std::initializer_list<const char*> names) {
    for (const char* n : names) {
      handle_ = dlopen(n, RTLD_NOW | RTLD_LOCAL);
      if (handle_) {
        name_ = n;
        return;
      }
      // Report the first name's failure; the others are fallbacks.
      const char* e = dlerror();
      if (error_.empty()) error_ = e ? e : n;
    }
  }
  ~SharedLibrary() {
    // Drivers (libcuda, NVML) do not like being unloaded while their state
    // lives on; keep them mapped for the life of the process.
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  explicit operator bool() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }
  const std::string& error() const { return error_; }

  // The symbol cast to a function pointer type, or nullptr.
  template <class Fn>
  Fn sym(const char* symbol) const {
    if (!handle_) return nullptr;
    return reinterpret_cast<Fn>(dlsym(handle_, symbol));
  }
  // Sets `fn` to the symbol; false (and `fn` null) when it is missing.
  template <class Fn>
  bool load(const char* symbol, Fn& fn) const {
    fn = sym<Fn>(symbol);
    return fn != nullptr;
  }
  // Path of the file that was actually loaded ("" if unknown).
  std::string path(const char* any_symbol) const {
    if (!handle_) return {};
    void* s = dlsym(handle_, any_symbol);
    Dl_info info{};
    if (s && dladdr(s, &info) && info.dli_fname) return info.dli_fname;
    return {};
  }

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string error_;
};

}  // namespace gdr
