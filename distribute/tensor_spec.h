// TensorSpec, as tf.TensorSpec: the dtype and shape of a tensor that a
// method of an rpc::Server takes or returns, or of a component of a
// dataset's elements (data::ElementSpec). A dimension may be unknown
// (kUnknownDim, TF's None) and so may the whole rank; a tensor matches a
// spec when its dtype is the same and its shape agrees on every known
// dimension.
//
// Example:
//   distribute::TensorSpec batch(devices::DType::kFloat32,
//                                {distribute::kUnknownDim, 3});
//   batch.IsCompatibleWith(devices::Tensor::FromVector<float>({1, 2, 3}));
//   // false: rank 1 against rank 2
//   batch.DebugString();  // "TensorSpec(shape=(None, 3), dtype=float32)"
#ifndef DISTRIBUTE_TENSOR_SPEC_H_
#define DISTRIBUTE_TENSOR_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "devices/dtype.h"
#include "devices/tensor.h"

namespace distribute {

// A dimension of any size (TF's None).
inline constexpr int64_t kUnknownDim = -1;

class TensorSpec {
 public:
  // A scalar float32, as tf.TensorSpec([]).
  TensorSpec() = default;

  // For shapes written in code or computed from other specs: every dim is
  // non-negative or kUnknownDim (asserted). Use Make() for dims that come
  // from input.
  TensorSpec(devices::DType dtype, absl::Span<const int64_t> dims);

  // INVALID_ARGUMENT naming the dimension if one is below kUnknownDim.
  static absl::StatusOr<TensorSpec> Make(devices::DType dtype,
                                         absl::Span<const int64_t> dims);
  // Any shape of `dtype` (tf.TensorSpec(None, dtype)).
  static TensorSpec UnknownRank(devices::DType dtype);
  // The exact dtype and shape of `tensor`.
  static TensorSpec Of(const devices::Tensor& tensor);

  devices::DType dtype() const { return dtype_; }
  bool has_known_rank() const { return dims_.has_value(); }
  // The dims; empty for a scalar and for an unknown rank.
  absl::Span<const int64_t> dims() const;

  // Same dtype, and the shape agrees on every known dimension.
  bool IsCompatibleWith(const devices::Tensor& tensor) const;

  // TF's repr: "TensorSpec(shape=(2, None), dtype=float32)",
  // "TensorSpec(shape=(), dtype=int32)", "TensorSpec(shape=<unknown>, ...)".
  std::string DebugString() const;

  friend bool operator==(const TensorSpec& a, const TensorSpec& b) {
    return a.dtype_ == b.dtype_ && a.dims_ == b.dims_;
  }
  friend bool operator!=(const TensorSpec& a, const TensorSpec& b) {
    return !(a == b);
  }

 private:
  struct Checked {};  // the dims were checked
  TensorSpec(Checked, devices::DType dtype,
             std::optional<std::vector<int64_t>> dims)
      : dtype_(dtype), dims_(std::move(dims)) {}

  devices::DType dtype_ = devices::DType::kFloat32;
  // nullopt: unknown rank.
  std::optional<std::vector<int64_t>> dims_ = std::vector<int64_t>{};
};

// OK when `tensors` match `specs` one for one. Otherwise INVALID_ARGUMENT
// that starts with `what` (e.g. "the arguments of method \"add\"") and names
// the count expected, or the first tensor that does not match and its spec.
absl::Status CheckCompatible(absl::Span<const TensorSpec> specs,
                             absl::Span<const devices::Tensor> tensors,
                             absl::string_view what);

// "(TensorSpec(...), TensorSpec(...))".
std::string SpecsDebugString(absl::Span<const TensorSpec> specs);

}  // namespace distribute

#endif  // DISTRIBUTE_TENSOR_SPEC_H_
