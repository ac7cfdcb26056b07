#include "devices/cuda/training_ops.h"

#include <initializer_list>
#include <utility>

#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_ops_util.h"
#include "devices/cuda/cuda_status.h"
#include "devices/status_macros.h"
#include "devices/training_kernels.h"

namespace devices {
namespace cuda {
namespace {

// Every tensor must be on `device` with data.
absl::Status AllOnDevice(
    const CudaDevice& device, absl::string_view kernel,
    std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  for (const auto& [role, tensor] : tensors) {
    if (tensor == nullptr) continue;
    RETURN_IF_ERROR(CheckOnDevice(device, kernel, role, *tensor));
  }
  return absl::OkStatus();
}

// Launches on device's stream with the device current.
template <typename F>
absl::Status LaunchWith(CudaDevice& device, absl::string_view kernel, F&& f) {
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  return LaunchStatus(f(), kernel, device);
}

}  // namespace

absl::StatusOr<KernelCost> BiasAdd(CudaDevice& device, const Tensor& bias,
                                   Tensor& x) {
  absl::Status s = CheckBiasAddArgs(bias, x);
  if (s.ok()) s = AllOnDevice(device, "BiasAdd", {{"x", &x}, {"bias", &bias}});
  RETURN_IF_ERROR(s);
  const int64_t batch = x.shape().dim(0);
  const int64_t features = x.shape().dim(1);
  s = LaunchWith(device, "BiasAdd", [&] {
    return LaunchBiasAdd(DTypeCode(x.dtype()), bias.raw_data(), x.raw_data(),
                         batch, features, device.stream());
  });
  RETURN_IF_ERROR(s);
  return BiasAddCost(x.dtype(), batch, features);
}

absl::StatusOr<KernelCost> BiasAddGrad(CudaDevice& device, const Tensor& dy,
                                       Tensor& db) {
  absl::Status s = CheckBiasAddGradArgs(dy, db);
  if (s.ok())
    s = AllOnDevice(device, "BiasAddGrad", {{"dy", &dy}, {"db", &db}});
  RETURN_IF_ERROR(s);
  const int64_t batch = dy.shape().dim(0);
  const int64_t features = dy.shape().dim(1);
  s = LaunchWith(device, "BiasAddGrad", [&] {
    return LaunchBiasAddGrad(DTypeCode(dy.dtype()), dy.raw_data(),
                             db.raw_data(), batch, features, device.stream());
  });
  RETURN_IF_ERROR(s);
  return BiasAddGradCost(dy.dtype(), batch, features);
}

absl::StatusOr<KernelCost> AverageLoss(CudaDevice& device, const Tensor& loss,
                                       const Tensor* weight, double divisor,
                                       Tensor& out) {
  absl::Status s = CheckAverageLossArgs(loss, weight, divisor, out);
  if (s.ok()) {
    s = AllOnDevice(device, "AverageLoss",
                    {{"loss", &loss}, {"weight", weight}, {"output", &out}});
  }
  RETURN_IF_ERROR(s);
  const int64_t n = loss.num_elements();
  const int64_t weight_count = weight == nullptr ? 0 : weight->num_elements();
  s = LaunchWith(device, "AverageLoss", [&] {
    return LaunchAverageLoss(DTypeCode(loss.dtype()), loss.raw_data(),
                             weight == nullptr ? nullptr : weight->raw_data(),
                             weight_count, divisor, out.raw_data(), n,
                             device.stream());
  });
  RETURN_IF_ERROR(s);
  return AverageLossCost(loss.dtype(), n, weight_count);
}

absl::StatusOr<KernelCost> RowScale(CudaDevice& device, const Tensor& in,
                                    const Tensor& row_weights, double alpha,
                                    Tensor& out) {
  absl::Status s = CheckRowScaleArgs(in, row_weights, out);
  if (s.ok()) {
    s = AllOnDevice(
        device, "RowScale",
        {{"input", &in}, {"row weights", &row_weights}, {"output", &out}});
  }
  RETURN_IF_ERROR(s);
  const int64_t rows = in.shape().dim(0);
  const int64_t cols = in.shape().dim(1);
  s = LaunchWith(device, "RowScale", [&] {
    return LaunchRowScale(DTypeCode(in.dtype()), in.raw_data(),
                          row_weights.raw_data(), alpha, out.raw_data(), rows,
                          cols, device.stream());
  });
  RETURN_IF_ERROR(s);
  return RowScaleCost(in.dtype(), rows, cols);
}

absl::StatusOr<KernelCost> SgdUpdate(CudaDevice& device, Tensor& var,
                                     const Tensor& grad, Tensor* m,
                                     double learning_rate, double momentum,
                                     bool nesterov) {
  absl::Status s = CheckSgdUpdateArgs(var, grad, m, momentum);
  if (s.ok()) {
    s = AllOnDevice(
        device, "SGDUpdate",
        {{"variable", &var}, {"gradient", &grad}, {"momentum slot", m}});
  }
  RETURN_IF_ERROR(s);
  const int64_t n = var.num_elements();
  s = LaunchWith(device, "SGDUpdate", [&] {
    return LaunchSgdUpdate(
        DTypeCode(var.dtype()), var.raw_data(), grad.raw_data(),
        m == nullptr ? nullptr : m->raw_data(), learning_rate, momentum,
        nesterov, n, device.stream());
  });
  RETURN_IF_ERROR(s);
  return SgdUpdateCost(var.dtype(), n, m != nullptr, nesterov);
}

absl::StatusOr<KernelCost> AdamUpdate(CudaDevice& device, Tensor& var,
                                      const Tensor& grad, Tensor& m, Tensor& v,
                                      double alpha, double beta_1,
                                      double beta_2, double epsilon) {
  absl::Status s = CheckAdamUpdateArgs(var, grad, m, v);
  if (s.ok()) {
    s = AllOnDevice(device, "AdamUpdate",
                    {{"variable", &var},
                     {"gradient", &grad},
                     {"m slot", &m},
                     {"v slot", &v}});
  }
  RETURN_IF_ERROR(s);
  const int64_t n = var.num_elements();
  s = LaunchWith(device, "AdamUpdate", [&] {
    return LaunchAdamUpdate(DTypeCode(var.dtype()), var.raw_data(),
                            grad.raw_data(), m.raw_data(), v.raw_data(), alpha,
                            beta_1, beta_2, epsilon, n, device.stream());
  });
  RETURN_IF_ERROR(s);
  return AdamUpdateCost(var.dtype(), n);
}

}  // namespace cuda
}  // namespace devices
