// The raw launch interface of the CUDA kernels (the .cu files of this
// package): device pointers, element counts, int codes for dtypes and
// operations (kernel_math.h: the values of devices::DType, devices::ReduceOp
// and math::BinaryCode) and a stream. Nothing here validates arguments or
// knows about Tensors; the Tensor-level wrappers in *_ops.h do that, and
// they are what programs call.
//
// Every function launches on `stream`, which must belong to the calling
// thread's current device, returns at once, and returns the launch error
// (cudaSuccess when the launch was accepted). n == 0 launches nothing.
//
// Example:
//   cudaError_t err = devices::cuda::LaunchBinary(
//       devices::cuda::math::kAdd, devices::cuda::math::kFloat32, a, b, out,
//       n, /*first_zero_divisor=*/nullptr, stream);
#ifndef DEVICES_CUDA_CUDA_KERNELS_H_
#define DEVICES_CUDA_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace devices {
namespace cuda {

// out[i] = a[i] op b[i] (op: math::BinaryCode) for every dtype but bool.
// For an integer kDiv, `first_zero_divisor` (device memory, or null) is
// lowered with atomicMin to the first index whose divisor is 0; that
// element's output is 0.
cudaError_t LaunchBinary(int op, int dtype, const void* a, const void* b,
                         void* out, int64_t n,
                         unsigned long long* first_zero_divisor,
                         cudaStream_t stream);

// out[i] = alpha * in[i] for the floating dtypes (alpha rounded as the host
// Scale rounds it).
cudaError_t LaunchScale(int dtype, const void* in, double alpha, void* out,
                        int64_t n, cudaStream_t stream);

// out[i] = max(features[i], 0), every dtype but bool.
cudaError_t LaunchRelu(int dtype, const void* features, void* out, int64_t n,
                       cudaStream_t stream);

// out[i] = features[i] > 0 ? gradients[i] : 0, every dtype but bool.
cudaError_t LaunchReluGrad(int dtype, const void* gradients,
                           const void* features, void* out, int64_t n,
                           cudaStream_t stream);

// Sets each of the n elements of `element_size` bytes (1, 2, 4 or 8) to the
// bit pattern in the low bytes of `pattern` (little-endian).
cudaError_t LaunchFillPattern(uint64_t pattern, int element_size, void* out,
                              int64_t n, cudaStream_t stream);

// out[i] = start + i * step rounded to the floating dtype.
cudaError_t LaunchIotaFloat(int dtype, double start, double step, void* out,
                            int64_t n, cudaStream_t stream);
// out[i] = first + i * delta (mod 2^64) truncated to the integer dtype.
cudaError_t LaunchIotaInt(int dtype, int64_t first, int64_t delta, void* out,
                          int64_t n, cudaStream_t stream);

// dst[i] = dst[i] op src[i] (op: math::ReduceCode, kMean acts as kSum), every
// dtype; bool is or/and on bytes. src may equal dst.
cudaError_t LaunchAccumulate(int op, int dtype, const void* src, void* dst,
                             int64_t n, cudaStream_t stream);

// Up to kMaxReduceInputs input pointers, passed to a kernel by value.
inline constexpr int kMaxReduceInputs = 8;
struct ReduceInputs {
  const void* data[kMaxReduceInputs];
  int count;
};

// out[i] = inputs[0][i] op inputs[1][i] op ... op inputs[count-1][i], left to
// right with LaunchAccumulate's arithmetic, then divided by `divisor` as
// LaunchFinalizeMean when divisor > 0 (not for bool): the same results as
// a copy, count-1 Accumulate steps and FinalizeMean, in one pass. `out` may
// be one of the inputs.
cudaError_t LaunchReduceInputs(int op, int dtype, const ReduceInputs& inputs,
                               void* out, int64_t n, int64_t divisor,
                               cudaStream_t stream);

// data[i] /= divisor, every dtype but bool.
cudaError_t LaunchFinalizeMean(int dtype, void* data, int64_t n,
                               int64_t divisor, cudaStream_t stream);

// Sparse softmax cross-entropy over [batch, classes] logits of a floating
// dtype with int32 or int64 labels (label_dtype). A row whose label is
// outside [0, classes) lowers `first_bad_row` (device memory, not null) to
// its index and writes nothing.
cudaError_t LaunchSoftmaxCrossEntropy(int dtype, int label_dtype,
                                      const void* logits, const void* labels,
                                      void* loss, void* dlogits, int64_t batch,
                                      int64_t classes,
                                      unsigned long long* first_bad_row,
                                      cudaStream_t stream);

// Uniform floating values in [low, high); `below_high_bits` holds the bits
// of the largest value of the dtype below `high` (used where rounding
// reaches high).
cudaError_t LaunchRandomUniformFloat(int dtype, uint64_t seed, double low,
                                     double high, uint64_t below_high_bits,
                                     void* out, int64_t n, cudaStream_t stream);
// Uniform integers low + floor(bits * range / 2^64) (range 0 means 2^64).
cudaError_t LaunchRandomUniformInt(int dtype, uint64_t seed, int64_t low,
                                   uint64_t range, void* out, int64_t n,
                                   cudaStream_t stream);
// Normal values mean + stddev * z for the floating dtypes.
cudaError_t LaunchRandomNormal(int dtype, uint64_t seed, double mean,
                               double stddev, void* out, int64_t n,
                               cudaStream_t stream);

// The training kernels (float32 and float64 only; training_kernels.cu).
// x[i, j] += bias[j] over [batch, features].
cudaError_t LaunchBiasAdd(int dtype, const void* bias, void* x, int64_t batch,
                          int64_t features, cudaStream_t stream);
// db[j] = sum over rows of dy[i, j], rows in order.
cudaError_t LaunchBiasAddGrad(int dtype, const void* dy, void* db,
                              int64_t batch, int64_t features,
                              cudaStream_t stream);
// *out = sum(loss[i] * weight[i or 0]) / divisor in double; weight may be
// null (weight_count 0). Always launches (n == 0 writes 0).
cudaError_t LaunchAverageLoss(int dtype, const void* loss, const void* weight,
                              int64_t weight_count, double divisor, void* out,
                              int64_t n, cudaStream_t stream);
// out[i, j] = in[i, j] * (T(alpha) * row_weights[i]).
cudaError_t LaunchRowScale(int dtype, const void* in, const void* row_weights,
                           double alpha, void* out, int64_t rows, int64_t cols,
                           cudaStream_t stream);
// Keras' SGD step; m is null without momentum.
cudaError_t LaunchSgdUpdate(int dtype, void* var, const void* grad, void* m,
                            double learning_rate, double momentum,
                            bool nesterov, int64_t n, cudaStream_t stream);
// Keras' Adam step with the caller's alpha.
cudaError_t LaunchAdamUpdate(int dtype, void* var, const void* grad, void* m,
                             void* v, double alpha, double beta_1,
                             double beta_2, double epsilon, int64_t n,
                             cudaStream_t stream);

// One thread that sleeps for about `nanoseconds` on the GPU: keeps a stream
// busy (tests of timeouts and ordering use it).
cudaError_t LaunchSleep(int64_t nanoseconds, cudaStream_t stream);

// cudaSuccess when the calling thread's current device can run this
// package's kernels; cudaErrorNoKernelImageForDevice (or
// cudaErrorInvalidDeviceFunction) when the build's -gencode targets
// (third_party/cuda/cuda.bzl) have no image for its compute capability,
// where every launch would fail. Launches nothing.
cudaError_t ProbeKernelImage();

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_CUDA_KERNELS_H_
