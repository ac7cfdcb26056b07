#include "distribute/models/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace models {

absl::StatusOr<std::vector<double>> NumericalGradient(
    devices::Tensor& x, absl::FunctionRef<absl::StatusOr<double>()> loss,
    double h) {
  if (x.dtype() != devices::DType::kFloat64 || !x.host_accessible()) {
    return absl::InvalidArgumentError(
        absl::StrCat("NumericalGradient needs a float64 host tensor, got ",
                     x.DebugString()));
  }
  double* data = x.data<double>();
  std::vector<double> grad(static_cast<size_t>(x.num_elements()));
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double original = data[i];
    data[i] = original + h;
    absl::StatusOr<double> plus = loss();
    data[i] = original - h;
    absl::StatusOr<double> minus = loss();
    data[i] = original;
    RETURN_IF_ERROR(plus.status());
    RETURN_IF_ERROR(minus.status());
    grad[static_cast<size_t>(i)] = (*plus - *minus) / (2 * h);
  }
  return grad;
}

double Dot(const devices::Tensor& a, const devices::Tensor& b) {
  const double* x = a.data<double>();
  const double* y = b.data<double>();
  double sum = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) sum += x[i] * y[i];
  return sum;
}

double MaxGradientError(const devices::Tensor& analytic,
                        const std::vector<double>& numeric) {
  if (analytic.num_elements() != static_cast<int64_t>(numeric.size())) {
    return std::numeric_limits<double>::infinity();
  }
  const double* a = analytic.data<double>();
  double worst = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double err =
        std::abs(a[i] - numeric[i]) / std::max(1.0, std::abs(numeric[i]));
    worst = std::max(worst, err);
  }
  return worst;
}

devices::Tensor TestTensor(const devices::Shape& shape, unsigned seed,
                           double low, double high) {
  absl::StatusOr<devices::Tensor> t =
      devices::Tensor::Host(devices::DType::kFloat64, shape);
  double* data = t->data<double>();
  uint64_t state = 0x853C49E6748FEA9Bu ^ seed;
  for (int64_t i = 0; i < t->num_elements(); ++i) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    const double u = static_cast<double>(state >> 11) * 0x1.0p-53;
    data[i] = low + (high - low) * u;
  }
  return *std::move(t);
}

}  // namespace models
}  // namespace distribute
