// Reduction CUDA kernels for collectives: the pairwise Accumulate step, the
// division that finishes a mean, and both fused over several inputs. The
// arithmetic is kernel_math.h's, shared with the host build.
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
__global__ void AccumulateKernel(int op, const T* src, T* dst, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    dst[i] = math::AccumulateElement<T>(op, dst[i], src[i]);
  }
}

__global__ void AccumulateBoolKernel(int op, const uint8_t* src, uint8_t* dst,
                                     int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    dst[i] = math::AccumulateBoolElement(op, dst[i], src[i]);
  }
}

// out[i] = in[0][i] op in[1][i] op ... (left to right), then / divisor
// when divisor > 0: the pairwise steps in one pass over memory. The loops
// are unrolled to kMaxReduceInputs with predicated steps, so the pointers
// stay in registers and an element's loads are issued together (a loop to
// a runtime count serializes them behind the accumulator).
template <typename T>
__global__ void ReduceInputsKernel(int op, ReduceInputs in, T* out, int64_t n,
                                   int64_t divisor) {
  const T* src[kMaxReduceInputs];
#pragma unroll
  for (int j = 0; j < kMaxReduceInputs; ++j) {
    src[j] = static_cast<const T*>(in.data[j]);
  }
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    T v[kMaxReduceInputs];
#pragma unroll
    for (int j = 0; j < kMaxReduceInputs; ++j) {
      if (j < in.count) v[j] = src[j][i];
    }
    T acc = v[0];
#pragma unroll
    for (int j = 1; j < kMaxReduceInputs; ++j) {
      if (j < in.count) acc = math::AccumulateElement<T>(op, acc, v[j]);
    }
    if (divisor > 0) acc = math::FinalizeMeanElement<T>(acc, divisor);
    out[i] = acc;
  }
}

__global__ void ReduceBoolInputsKernel(int op, ReduceInputs in, uint8_t* out,
                                       int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    uint8_t acc = static_cast<const uint8_t*>(in.data[0])[i];
    for (int j = 1; j < in.count; ++j) {
      acc = math::AccumulateBoolElement(
          op, acc, static_cast<const uint8_t*>(in.data[j])[i]);
    }
    out[i] = acc;
  }
}

template <typename T>
__global__ void FinalizeMeanKernel(T* data, int64_t n, int64_t divisor) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    data[i] = math::FinalizeMeanElement<T>(data[i], divisor);
  }
}

}  // namespace

cudaError_t LaunchAccumulate(int op, int dtype, const void* src, void* dst,
                             int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (op < math::kSum || op > math::kProd) return cudaErrorInvalidValue;
  if (dtype == math::kBool) {
    AccumulateBoolKernel<<<BlocksFor(n), kThreads, 0, stream>>>(
        op, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), n);
    return cudaGetLastError();
  }
  const cudaError_t dispatched = internal::DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    AccumulateKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        op, static_cast<const T*>(src), static_cast<T*>(dst), n);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchReduceInputs(int op, int dtype, const ReduceInputs& inputs,
                               void* out, int64_t n, int64_t divisor,
                               cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (op < math::kSum || op > math::kProd) return cudaErrorInvalidValue;
  if (inputs.count < 1 || inputs.count > kMaxReduceInputs || divisor < 0) {
    return cudaErrorInvalidValue;
  }
  if (dtype == math::kBool) {
    if (divisor > 0) return cudaErrorInvalidValue;
    ReduceBoolInputsKernel<<<BlocksFor(n), kThreads, 0, stream>>>(
        op, inputs, static_cast<uint8_t*>(out), n);
    return cudaGetLastError();
  }
  const cudaError_t dispatched = internal::DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    ReduceInputsKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        op, inputs, static_cast<T*>(out), n, divisor);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

cudaError_t LaunchFinalizeMean(int dtype, void* data, int64_t n,
                               int64_t divisor, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype == math::kBool || divisor < 1) return cudaErrorInvalidValue;
  const cudaError_t dispatched = internal::DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    FinalizeMeanKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<T*>(data), n, divisor);
    return cudaSuccess;
  });
  return dispatched != cudaSuccess ? dispatched : cudaGetLastError();
}

}  // namespace cuda
}  // namespace devices
