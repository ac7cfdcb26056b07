// Elementwise CUDA kernels: binary arithmetic, scaling, ReLU and its
// gradient, fill and iota, and a sleep kernel for tests. The arithmetic is
// kernel_math.h's, shared with the host build.
#include <cuda_runtime.h>

#include <cstdint>

#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_launch.h"
#include "devices/cuda/kernel_math.h"

namespace devices {
namespace cuda {
namespace {

using internal::BlocksFor;
using internal::GridStart;
using internal::GridStride;
using internal::kThreads;

template <typename T>
__global__ void BinaryKernel(int op, const T* a, const T* b, T* out, int64_t n,
                             unsigned long long* first_zero_divisor) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    if constexpr (!math::kIsFloatType<T>) {
      if (op == math::kDiv && b[i] == 0) {
        if (first_zero_divisor != nullptr) {
          atomicMin(first_zero_divisor, static_cast<unsigned long long>(i));
        }
        out[i] = T{0};
        continue;
      }
    }
    out[i] = math::BinaryElement<T>(op, a[i], b[i]);
  }
}

template <typename T>
__global__ void ScaleKernel(math::Compute<T> alpha, const T* in, T* out,
                            int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    out[i] = math::ScaleElement<T>(alpha, in[i]);
  }
}

template <typename T>
__global__ void ReluKernel(const T* in, T* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    out[i] = math::ReluElement<T>(in[i]);
  }
}

template <typename T>
__global__ void ReluGradKernel(const T* gradients, const T* features, T* out,
                               int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    out[i] = math::ReluGradElement<T>(gradients[i], features[i]);
  }
}

template <typename W>
__global__ void FillKernel(W value, W* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = value;
}

template <typename T>
__global__ void IotaFloatKernel(double start, double step, T* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    out[i] = math::IotaFloatElement<T>(start, step, i);
  }
}

template <typename T>
__global__ void IotaIntKernel(int64_t first, int64_t delta, T* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    out[i] = math::IotaIntElement<T>(first, delta, i);
  }
}

__device__ __forceinline__ uint64_t GlobalTimer() {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void SleepKernel(int64_t nanoseconds) {
  const uint64_t start = GlobalTimer();
  while (GlobalTimer() - start < static_cast<uint64_t>(nanoseconds)) {
    __nanosleep(1000);
  }
}

}  // namespace

cudaError_t LaunchBinary(int op, int dtype, const void* a, const void* b,
                         void* out, int64_t n,
                         unsigned long long* first_zero_divisor,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype == math::kBool || op < math::kAdd || op > math::kDiv) {
    return cudaErrorInvalidValue;
  }
  const cudaError_t dispatched = internal::DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    BinaryKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        op, static_cast<const T*>(a), static_cast<const T*>(b),
        static_cast<T*>(out), n, first_zero_divisor);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchScale(int dtype, const void* in, double alpha, void* out,
                        int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const cudaError_t dispatched = internal::DispatchFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    ScaleKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        math::ScaleFactor<T>(alpha), static_cast<const T*>(in),
        static_cast<T*>(out), n);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchRelu(int dtype, const void* features, void* out, int64_t n,
                       cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype == math::kBool) return cudaErrorInvalidValue;
  const cudaError_t dispatched = internal::DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    ReluKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const T*>(features), static_cast<T*>(out), n);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchReluGrad(int dtype, const void* gradients,
                           const void* features, void* out, int64_t n,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype == math::kBool) return cudaErrorInvalidValue;
  const cudaError_t dispatched = internal::DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    ReluGradKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const T*>(gradients), static_cast<const T*>(features),
        static_cast<T*>(out), n);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchFillPattern(uint64_t pattern, int element_size, void* out,
                              int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_size) {
    case 1:
      FillKernel<uint8_t><<<BlocksFor(n), kThreads, 0, stream>>>(
          static_cast<uint8_t>(pattern), static_cast<uint8_t*>(out), n);
      break;
    case 2:
      FillKernel<uint16_t><<<BlocksFor(n), kThreads, 0, stream>>>(
          static_cast<uint16_t>(pattern), static_cast<uint16_t*>(out), n);
      break;
    case 4:
      FillKernel<uint32_t><<<BlocksFor(n), kThreads, 0, stream>>>(
          static_cast<uint32_t>(pattern), static_cast<uint32_t*>(out), n);
      break;
    case 8:
      FillKernel<uint64_t><<<BlocksFor(n), kThreads, 0, stream>>>(
          pattern, static_cast<uint64_t*>(out), n);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t LaunchIotaFloat(int dtype, double start, double step, void* out,
                            int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const cudaError_t dispatched = internal::DispatchFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    IotaFloatKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        start, step, static_cast<T*>(out), n);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchIotaInt(int dtype, int64_t first, int64_t delta, void* out,
                          int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const cudaError_t dispatched = internal::DispatchInt(dtype, [&](auto zero) {
    using T = decltype(zero);
    IotaIntKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        first, delta, static_cast<T*>(out), n);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchSleep(int64_t nanoseconds, cudaStream_t stream) {
  SleepKernel<<<1, 1, 0, stream>>>(nanoseconds < 0 ? 0 : nanoseconds);
  return cudaGetLastError();
}

cudaError_t ProbeKernelImage() {
  // Asking for a kernel's attributes loads the module's image for the
  // current device, as its first launch would.
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, ScaleKernel<float>);
}

}  // namespace cuda
}  // namespace devices
