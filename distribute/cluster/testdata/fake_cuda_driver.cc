// A stand-in for libcuda.so.1 in tests of CudaDriverGpuCount: its answers
// come from the environment at each call, so one library plays every case.
//   FAKE_CUDA_INIT_RESULT   what cuInit returns (default 0, success)
//   FAKE_CUDA_DEVICE_COUNT  what cuDeviceGetCount reports (default 0)
//   FAKE_CUDA_COUNT_RESULT  what cuDeviceGetCount returns (default 0)

#include <cstdlib>

namespace {

int EnvInt(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? 0 : std::atoi(value);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cuInit(unsigned int) {
  return EnvInt("FAKE_CUDA_INIT_RESULT");
}

__attribute__((visibility("default"))) int cuDeviceGetCount(int* count) {
  *count = EnvInt("FAKE_CUDA_DEVICE_COUNT");
  return EnvInt("FAKE_CUDA_COUNT_RESULT");
}

__attribute__((visibility("default"))) int cuGetErrorName(int error,
                                                          const char** name) {
  if (error == 999) {
    *name = "CUDA_ERROR_UNKNOWN";
    return 0;
  }
  return 1;  // CUDA_ERROR_INVALID_VALUE: a code this stand-in cannot name.
}

}  // extern "C"
