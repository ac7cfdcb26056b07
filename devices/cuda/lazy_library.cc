#include "devices/cuda/lazy_library.h"

#include <dlfcn.h>

#include <string>

namespace devices {
namespace cuda {

LazyLibrary::LazyLibrary(const char* what,
                         std::initializer_list<const char*> names)
    : what_(what), names_(names.begin(), names.end()) {}

void LazyLibrary::Open() {
  std::string tried;
  for (const std::string& name : names_) {
    // RTLD_GLOBAL: the library's own dependencies (cuBLASLt for cuBLAS)
    // resolve against it as they would had the binary linked it.
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle_ != nullptr) return;
    const char* why = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += why != nullptr ? why : name;
  }
  open_error_ = what_ + " could not be loaded (" + tried +
                "); install it or put the directory that holds it on "
                "LD_LIBRARY_PATH";
}

void* LazyLibrary::Symbol(const char* symbol) {
  std::call_once(opened_, [this] { Open(); });
  if (handle_ == nullptr) return nullptr;
  void* address = dlsym(handle_, symbol);
  if (address == nullptr) {
    std::call_once(missing_once_, [&] {
      missing_error_ = what_ + " has no symbol " + symbol +
                       " (a version this build does not support?)";
      std::lock_guard<std::mutex> lock(mu_);
      missing_ = true;
    });
  }
  return address;
}

const char* LazyLibrary::error() const {
  if (!open_error_.empty()) return open_error_.c_str();
  std::lock_guard<std::mutex> lock(mu_);
  return missing_ ? missing_error_.c_str() : "";
}

}  // namespace cuda
}  // namespace devices
