// A shared library opened with dlopen when first used, so that a process
// that never calls into it never maps it. cuBLAS (with cuBLASLt) and NCCL
// are over 200 MB of libraries whose loading cost every binary that links
// them about 0.1 s and 200 MB of memory at start, CPU-only commands
// included; behind a LazyLibrary only the commands that run on GPUs pay.
// Plain C++ (no Abseil), so that nvcc-compiled files can use it.
//
// Example:
//   LazyLibrary& Cublas() {
//     static LazyLibrary* lib =
//         new LazyLibrary("cuBLAS", {"libcublas.so.13", "libcublas.so"});
//     return *lib;
//   }
//   using Create = int (*)(cublasContext**);
//   static auto* create =
//       reinterpret_cast<Create>(Cublas().Symbol("cublasCreate_v2"));
//   if (create == nullptr) { /* Cublas().error() says why */ }
#ifndef DEVICES_CUDA_LAZY_LIBRARY_H_
#define DEVICES_CUDA_LAZY_LIBRARY_H_

#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

namespace devices {
namespace cuda {

class LazyLibrary {
 public:
  // `what` names the library in messages ("cuBLAS"); `names` are the file
  // names (sonames or paths) dlopen tries, in order: the first that opens
  // is the library.
  LazyLibrary(const char* what, std::initializer_list<const char*> names);
  LazyLibrary(const LazyLibrary&) = delete;
  LazyLibrary& operator=(const LazyLibrary&) = delete;

  // Opens the library on the first call (thread-safe) and returns the
  // address of `symbol`, or null when the library cannot be opened or
  // lacks it; error() then says which, with dlopen's reason and what to do.
  void* Symbol(const char* symbol);
  // Why Symbol returned null: the library's failure to open, else the
  // first symbol it lacked ("" before any failure). Stays valid.
  const char* error() const;

 private:
  void Open();

  const std::string what_;
  const std::vector<std::string> names_;
  std::once_flag opened_;
  void* handle_ = nullptr;  // written once, under opened_
  std::string open_error_;  // written once, under opened_
  std::once_flag missing_once_;
  std::string missing_error_;  // written once, under missing_once_
  bool missing_ = false;       // set (under missing_once_) once written
  mutable std::mutex mu_;      // orders missing_ for error()
};

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_LAZY_LIBRARY_H_
