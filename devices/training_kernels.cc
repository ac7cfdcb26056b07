#include "devices/training_kernels.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "devices/kernel_util.h"

namespace devices {
namespace {

#define TK_RETURN_IF_ERROR(expr)             \
  do {                                       \
    absl::Status tk_status_ = (expr);        \
    if (!tk_status_.ok()) return tk_status_; \
  } while (0)

absl::Status CheckModelDType(absl::string_view op, absl::string_view role,
                             DType dtype) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": ", role, " is ", DTypeName(dtype),
      "; the training kernels compute in float32 or float64 only"));
}

absl::Status CheckRank(absl::string_view op, absl::string_view role,
                       const Tensor& tensor, int rank) {
  if (tensor.shape().rank() == rank) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": ", role, " must have rank ", rank, ", got shape ",
                   tensor.shape().DebugString()));
}

absl::Status CheckLike(absl::string_view op, absl::string_view role,
                       const Tensor& tensor, DType dtype, const Shape& shape) {
  if (tensor.dtype() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", role, " is ", DTypeName(tensor.dtype()),
                     " but must be ", DTypeName(dtype)));
  }
  if (tensor.shape() != shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": ", role, " has shape ", tensor.shape().DebugString(),
        " but must have shape ", shape.DebugString()));
  }
  return absl::OkStatus();
}

// Calls f(T{}) with T = float or double for a checked model dtype.
template <typename F>
auto VisitModelDType(DType dtype, F&& f) {
  return dtype == DType::kFloat64 ? f(double{}) : f(float{});
}

}  // namespace

absl::Status CheckBiasAddArgs(const Tensor& bias, const Tensor& x) {
  TK_RETURN_IF_ERROR(CheckModelDType("BiasAdd", "x", x.dtype()));
  TK_RETURN_IF_ERROR(CheckRank("BiasAdd", "x", x, 2));
  return CheckLike("BiasAdd", "bias", bias, x.dtype(),
                   Shape({x.shape().dim(1)}));
}

absl::StatusOr<KernelCost> BiasAdd(const Tensor& bias, Tensor& x) {
  TK_RETURN_IF_ERROR(CheckBiasAddArgs(bias, x));
  TK_RETURN_IF_ERROR(CheckHostTensor("BiasAdd", "x", x));
  TK_RETURN_IF_ERROR(CheckHostTensor("BiasAdd", "bias", bias));
  const int64_t batch = x.shape().dim(0);
  const int64_t features = x.shape().dim(1);
  VisitModelDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* y = x.data<T>();
    const T* b = bias.data<T>();
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t j = 0; j < features; ++j) y[i * features + j] += b[j];
    }
  });
  return BiasAddCost(x.dtype(), batch, features);
}

absl::Status CheckBiasAddGradArgs(const Tensor& dy, const Tensor& db) {
  TK_RETURN_IF_ERROR(CheckModelDType("BiasAddGrad", "dy", dy.dtype()));
  TK_RETURN_IF_ERROR(CheckRank("BiasAddGrad", "dy", dy, 2));
  return CheckLike("BiasAddGrad", "db", db, dy.dtype(),
                   Shape({dy.shape().dim(1)}));
}

absl::StatusOr<KernelCost> BiasAddGrad(const Tensor& dy, Tensor& db) {
  TK_RETURN_IF_ERROR(CheckBiasAddGradArgs(dy, db));
  TK_RETURN_IF_ERROR(CheckHostTensor("BiasAddGrad", "dy", dy));
  TK_RETURN_IF_ERROR(CheckHostTensor("BiasAddGrad", "db", db));
  const int64_t batch = dy.shape().dim(0);
  const int64_t features = dy.shape().dim(1);
  VisitModelDType(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* g = dy.data<T>();
    T* out = db.data<T>();
    for (int64_t j = 0; j < features; ++j) out[j] = T{0};
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t j = 0; j < features; ++j) out[j] += g[i * features + j];
    }
  });
  return BiasAddGradCost(dy.dtype(), batch, features);
}

absl::Status CheckAverageLossArgs(const Tensor& loss, const Tensor* weight,
                                  double divisor, const Tensor& out) {
  TK_RETURN_IF_ERROR(CheckModelDType("AverageLoss", "loss", loss.dtype()));
  if (!(divisor > 0) || !std::isfinite(divisor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AverageLoss: the divisor must be a positive number, got ", divisor));
  }
  if (weight != nullptr) {
    if (weight->num_elements() != 1) {
      TK_RETURN_IF_ERROR(CheckLike("AverageLoss", "weight", *weight,
                                   loss.dtype(), loss.shape()));
    } else if (weight->dtype() != loss.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("AverageLoss: weight is ", DTypeName(weight->dtype()),
                       " but must be ", DTypeName(loss.dtype())));
    }
  }
  return CheckLike("AverageLoss", "output", out, loss.dtype(), Shape());
}

absl::StatusOr<KernelCost> AverageLoss(const Tensor& loss, const Tensor* weight,
                                       double divisor, Tensor& out) {
  TK_RETURN_IF_ERROR(CheckAverageLossArgs(loss, weight, divisor, out));
  const int64_t n = loss.num_elements();
  const int64_t weight_count = weight == nullptr ? 0 : weight->num_elements();
  if (weight != nullptr) {
    TK_RETURN_IF_ERROR(CheckHostTensor("AverageLoss", "weight", *weight));
  }
  TK_RETURN_IF_ERROR(CheckHostTensor("AverageLoss", "loss", loss));
  TK_RETURN_IF_ERROR(CheckHostTensor("AverageLoss", "output", out));
  VisitModelDType(loss.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* l = loss.data<T>();
    const T* w = weight == nullptr ? nullptr : weight->data<T>();
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double term = static_cast<double>(l[i]);
      if (w != nullptr) {
        term *= static_cast<double>(weight_count == 1 ? w[0] : w[i]);
      }
      sum += term;
    }
    *out.data<T>() = static_cast<T>(sum / divisor);
  });
  return AverageLossCost(loss.dtype(), n, weight_count);
}

absl::Status CheckRowScaleArgs(const Tensor& in, const Tensor& row_weights,
                               const Tensor& out) {
  TK_RETURN_IF_ERROR(CheckModelDType("RowScale", "input", in.dtype()));
  TK_RETURN_IF_ERROR(CheckRank("RowScale", "input", in, 2));
  TK_RETURN_IF_ERROR(CheckLike("RowScale", "row weights", row_weights,
                               in.dtype(), Shape({in.shape().dim(0)})));
  return CheckLike("RowScale", "output", out, in.dtype(), in.shape());
}

absl::StatusOr<KernelCost> RowScale(const Tensor& in, const Tensor& row_weights,
                                    double alpha, Tensor& out) {
  TK_RETURN_IF_ERROR(CheckRowScaleArgs(in, row_weights, out));
  TK_RETURN_IF_ERROR(CheckHostTensor("RowScale", "input", in));
  TK_RETURN_IF_ERROR(CheckHostTensor("RowScale", "row weights", row_weights));
  TK_RETURN_IF_ERROR(CheckHostTensor("RowScale", "output", out));
  const int64_t rows = in.shape().dim(0);
  const int64_t cols = in.shape().dim(1);
  VisitModelDType(in.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = in.data<T>();
    const T* w = row_weights.data<T>();
    T* y = out.data<T>();
    const T a = static_cast<T>(alpha);
    for (int64_t i = 0; i < rows; ++i) {
      const T scale = a * w[i];
      for (int64_t j = 0; j < cols; ++j) {
        y[i * cols + j] = x[i * cols + j] * scale;
      }
    }
  });
  return RowScaleCost(in.dtype(), rows, cols);
}

absl::Status CheckSgdUpdateArgs(const Tensor& var, const Tensor& grad,
                                const Tensor* m, double momentum) {
  TK_RETURN_IF_ERROR(CheckModelDType("SGDUpdate", "variable", var.dtype()));
  TK_RETURN_IF_ERROR(
      CheckLike("SGDUpdate", "gradient", grad, var.dtype(), var.shape()));
  if ((m != nullptr) != (momentum != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SGDUpdate: a momentum slot is needed exactly when momentum != 0 "
        "(momentum is ",
        momentum, ", slot ", m == nullptr ? "missing" : "given", ")"));
  }
  if (m == nullptr) return absl::OkStatus();
  return CheckLike("SGDUpdate", "momentum slot", *m, var.dtype(), var.shape());
}

absl::StatusOr<KernelCost> SgdUpdate(Tensor& var, const Tensor& grad, Tensor* m,
                                     double learning_rate, double momentum,
                                     bool nesterov) {
  TK_RETURN_IF_ERROR(CheckSgdUpdateArgs(var, grad, m, momentum));
  if (m != nullptr) {
    TK_RETURN_IF_ERROR(CheckHostTensor("SGDUpdate", "momentum slot", *m));
  }
  TK_RETURN_IF_ERROR(CheckHostTensor("SGDUpdate", "variable", var));
  TK_RETURN_IF_ERROR(CheckHostTensor("SGDUpdate", "gradient", grad));
  const int64_t n = var.num_elements();
  VisitModelDType(var.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* x = var.data<T>();
    const T* g = grad.data<T>();
    const T lr = static_cast<T>(learning_rate);
    if (m == nullptr) {
      for (int64_t i = 0; i < n; ++i) x[i] -= g[i] * lr;
      return;
    }
    T* mom = m->data<T>();
    const T mu = static_cast<T>(momentum);
    for (int64_t i = 0; i < n; ++i) {
      mom[i] = mom[i] * mu - g[i] * lr;
      if (nesterov) {
        x[i] += mom[i] * mu - g[i] * lr;
      } else {
        x[i] += mom[i];
      }
    }
  });
  return SgdUpdateCost(var.dtype(), n, m != nullptr, nesterov);
}

absl::Status CheckAdamUpdateArgs(const Tensor& var, const Tensor& grad,
                                 const Tensor& m, const Tensor& v) {
  TK_RETURN_IF_ERROR(CheckModelDType("AdamUpdate", "variable", var.dtype()));
  TK_RETURN_IF_ERROR(
      CheckLike("AdamUpdate", "gradient", grad, var.dtype(), var.shape()));
  TK_RETURN_IF_ERROR(
      CheckLike("AdamUpdate", "m slot", m, var.dtype(), var.shape()));
  return CheckLike("AdamUpdate", "v slot", v, var.dtype(), var.shape());
}

absl::StatusOr<KernelCost> AdamUpdate(Tensor& var, const Tensor& grad,
                                      Tensor& m, Tensor& v, double alpha,
                                      double beta_1, double beta_2,
                                      double epsilon) {
  TK_RETURN_IF_ERROR(CheckAdamUpdateArgs(var, grad, m, v));
  TK_RETURN_IF_ERROR(CheckHostTensor("AdamUpdate", "variable", var));
  TK_RETURN_IF_ERROR(CheckHostTensor("AdamUpdate", "gradient", grad));
  TK_RETURN_IF_ERROR(CheckHostTensor("AdamUpdate", "m slot", m));
  TK_RETURN_IF_ERROR(CheckHostTensor("AdamUpdate", "v slot", v));
  const int64_t n = var.num_elements();
  VisitModelDType(var.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* x = var.data<T>();
    const T* g = grad.data<T>();
    T* mt = m.data<T>();
    T* vt = v.data<T>();
    const T a = static_cast<T>(alpha);
    const T one_minus_beta_1 = static_cast<T>(1.0 - beta_1);
    const T one_minus_beta_2 = static_cast<T>(1.0 - beta_2);
    const T eps = static_cast<T>(epsilon);
    for (int64_t i = 0; i < n; ++i) {
      mt[i] += (g[i] - mt[i]) * one_minus_beta_1;
      vt[i] += (g[i] * g[i] - vt[i]) * one_minus_beta_2;
      x[i] -= (mt[i] * a) / (std::sqrt(vt[i]) + eps);
    }
  });
  return AdamUpdateCost(var.dtype(), n);
}

}  // namespace devices

#undef TK_RETURN_IF_ERROR
