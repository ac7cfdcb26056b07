// The training kernels on the GPU (the counterparts of
// devices/training_kernels.h): bias add and its gradient, the averaged loss,
// row scaling, and the fused SGD and Adam updates. Each element goes through
// the host kernel's operations in the host kernel's order, with the
// round-to-nearest intrinsics (__fmul_rn, __dadd_rn, __fsqrt_rn, ...) so that
// nvcc cannot fuse a multiply and an add into an FMA: the results are the
// host's bit for bit. The one exception is AverageLoss, which sums in double
// in a fixed order (a single block: per-thread strided sums, then a tree),
// not in index order as the host does; its float32 result matches the
// host's except when the double sums differ across a float32 rounding
// boundary, and a float64 result may differ in the last bits.
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

// Rounded arithmetic that the compiler may not contract.
__device__ __forceinline__ float Add(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double Add(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ __forceinline__ float Sub(float a, float b) {
  return __fsub_rn(a, b);
}
__device__ __forceinline__ double Sub(double a, double b) {
  return __dsub_rn(a, b);
}
__device__ __forceinline__ float Mul(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double Mul(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ __forceinline__ float Div(float a, float b) {
  return __fdiv_rn(a, b);
}
__device__ __forceinline__ double Div(double a, double b) {
  return __ddiv_rn(a, b);
}
__device__ __forceinline__ float Sqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double Sqrt(double a) { return __dsqrt_rn(a); }

template <typename F>
cudaError_t DispatchModel(int dtype, F&& f) {
  if (dtype == math::kFloat32) return f(float{});
  if (dtype == math::kFloat64) return f(double{});
  return cudaErrorInvalidValue;
}

template <typename T>
__global__ void BiasAddKernel(const T* bias, T* x, int64_t n,
                              int64_t features) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    x[i] = Add(x[i], bias[i % features]);
  }
}

// One thread per column, rows added in order from zero (the host's order).
template <typename T>
__global__ void BiasAddGradKernel(const T* dy, T* db, int64_t batch,
                                  int64_t features) {
  for (int64_t j = GridStart(); j < features; j += GridStride()) {
    T sum = T{0};
    for (int64_t i = 0; i < batch; ++i) sum = Add(sum, dy[i * features + j]);
    db[j] = sum;
  }
}

// One block of kThreads threads: thread t sums elements t, t + kThreads,
// ... in order, then the block adds the partial sums in a fixed tree.
template <typename T>
__global__ void AverageLossKernel(const T* loss, const T* weight,
                                  int64_t weight_count, double divisor, T* out,
                                  int64_t n) {
  __shared__ double partial[kThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    double term = static_cast<double>(loss[i]);
    if (weight != nullptr) {
      term = __dmul_rn(term,
                       static_cast<double>(weight[weight_count == 1 ? 0 : i]));
    }
    sum = __dadd_rn(sum, term);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      partial[threadIdx.x] =
          __dadd_rn(partial[threadIdx.x], partial[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = static_cast<T>(__ddiv_rn(partial[0], divisor));
}

template <typename T>
__global__ void RowScaleKernel(const T* in, const T* w, T alpha, T* out,
                               int64_t n, int64_t cols) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    const T scale = Mul(alpha, w[i / cols]);
    out[i] = Mul(in[i], scale);
  }
}

template <typename T>
__global__ void SgdKernel(T* var, const T* grad, T* m, T lr, T mu,
                          bool nesterov, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    const T g_lr = Mul(grad[i], lr);
    if (m == nullptr) {
      var[i] = Sub(var[i], g_lr);
      continue;
    }
    const T mom = Sub(Mul(m[i], mu), g_lr);
    m[i] = mom;
    var[i] = nesterov ? Add(var[i], Sub(Mul(mom, mu), g_lr)) : Add(var[i], mom);
  }
}

template <typename T>
__global__ void AdamKernel(T* var, const T* grad, T* m, T* v, T alpha,
                           T one_minus_beta_1, T one_minus_beta_2, T eps,
                           int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    const T g = grad[i];
    const T mt = Add(m[i], Mul(Sub(g, m[i]), one_minus_beta_1));
    const T vt = Add(v[i], Mul(Sub(Mul(g, g), v[i]), one_minus_beta_2));
    m[i] = mt;
    v[i] = vt;
    var[i] = Sub(var[i], Div(Mul(mt, alpha), Add(Sqrt(vt), eps)));
  }
}

}  // namespace

cudaError_t LaunchBiasAdd(int dtype, const void* bias, void* x, int64_t batch,
                          int64_t features, cudaStream_t stream) {
  const int64_t n = batch * features;
  if (n == 0) return cudaSuccess;
  return DispatchModel(dtype, [&](auto zero) {
    using T = decltype(zero);
    BiasAddKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const T*>(bias), static_cast<T*>(x), n, features);
    return cudaGetLastError();
  });
}

cudaError_t LaunchBiasAddGrad(int dtype, const void* dy, void* db,
                              int64_t batch, int64_t features,
                              cudaStream_t stream) {
  if (features == 0) return cudaSuccess;
  return DispatchModel(dtype, [&](auto zero) {
    using T = decltype(zero);
    BiasAddGradKernel<T><<<BlocksFor(features), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(db), batch, features);
    return cudaGetLastError();
  });
}

cudaError_t LaunchAverageLoss(int dtype, const void* loss, const void* weight,
                              int64_t weight_count, double divisor, void* out,
                              int64_t n, cudaStream_t stream) {
  return DispatchModel(dtype, [&](auto zero) {
    using T = decltype(zero);
    AverageLossKernel<T><<<1, kThreads, 0, stream>>>(
        static_cast<const T*>(loss), static_cast<const T*>(weight),
        weight_count, divisor, static_cast<T*>(out), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchRowScale(int dtype, const void* in, const void* row_weights,
                           double alpha, void* out, int64_t rows, int64_t cols,
                           cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  return DispatchModel(dtype, [&](auto zero) {
    using T = decltype(zero);
    RowScaleKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<const T*>(row_weights),
        static_cast<T>(alpha), static_cast<T*>(out), n, cols);
    return cudaGetLastError();
  });
}

cudaError_t LaunchSgdUpdate(int dtype, void* var, const void* grad, void* m,
                            double learning_rate, double momentum,
                            bool nesterov, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return DispatchModel(dtype, [&](auto zero) {
    using T = decltype(zero);
    SgdKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<T*>(var), static_cast<const T*>(grad), static_cast<T*>(m),
        static_cast<T>(learning_rate), static_cast<T>(momentum), nesterov, n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchAdamUpdate(int dtype, void* var, const void* grad, void* m,
                             void* v, double alpha, double beta_1,
                             double beta_2, double epsilon, int64_t n,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return DispatchModel(dtype, [&](auto zero) {
    using T = decltype(zero);
    AdamKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<T*>(var), static_cast<const T*>(grad), static_cast<T*>(m),
        static_cast<T*>(v), static_cast<T>(alpha), static_cast<T>(1.0 - beta_1),
        static_cast<T>(1.0 - beta_2), static_cast<T>(epsilon), n);
    return cudaGetLastError();
  });
}

}  // namespace cuda
}  // namespace devices
