#include "distribute/tensor_spec.h"

#include <cassert>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distribute {

TensorSpec::TensorSpec(devices::DType dtype, absl::Span<const int64_t> dims)
    : dtype_(dtype), dims_(std::vector<int64_t>(dims.begin(), dims.end())) {
  for (int64_t d : dims) {
    assert(d >= kUnknownDim && "a TensorSpec dimension is >= 0 or kUnknownDim");
    (void)d;
  }
}

absl::StatusOr<TensorSpec> TensorSpec::Make(devices::DType dtype,
                                            absl::Span<const int64_t> dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < kUnknownDim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dimension ", i, " of a TensorSpec is ", dims[i],
          ": a dimension is a size >= 0, or kUnknownDim (-1) for any size"));
    }
  }
  return TensorSpec(Checked(), dtype,
                    std::vector<int64_t>(dims.begin(), dims.end()));
}

TensorSpec TensorSpec::UnknownRank(devices::DType dtype) {
  return TensorSpec(Checked(), dtype, std::nullopt);
}

TensorSpec TensorSpec::Of(const devices::Tensor& tensor) {
  const absl::Span<const int64_t> dims = tensor.shape().dims();
  return TensorSpec(Checked(), tensor.dtype(),
                    std::vector<int64_t>(dims.begin(), dims.end()));
}

absl::Span<const int64_t> TensorSpec::dims() const {
  if (!dims_.has_value()) return {};
  return *dims_;
}

bool TensorSpec::IsCompatibleWith(const devices::Tensor& tensor) const {
  if (tensor.dtype() != dtype_) return false;
  if (!dims_.has_value()) return true;
  const absl::Span<const int64_t> got = tensor.shape().dims();
  if (got.size() != dims_->size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if ((*dims_)[i] != kUnknownDim && (*dims_)[i] != got[i]) return false;
  }
  return true;
}

std::string TensorSpec::DebugString() const {
  std::string shape;
  if (!dims_.has_value()) {
    shape = "<unknown>";
  } else {
    shape = absl::StrCat("(",
                         absl::StrJoin(*dims_, ", ",
                                       [](std::string* out, int64_t d) {
                                         absl::StrAppend(
                                             out, d == kUnknownDim
                                                      ? std::string("None")
                                                      : absl::StrCat(d));
                                       }),
                         dims_->size() == 1 ? ",)" : ")");
  }
  return absl::StrCat("TensorSpec(shape=", shape,
                      ", dtype=", devices::DTypeName(dtype_), ")");
}

std::string SpecsDebugString(absl::Span<const TensorSpec> specs) {
  return absl::StrCat("(",
                      absl::StrJoin(specs, ", ",
                                    [](std::string* out, const TensorSpec& s) {
                                      absl::StrAppend(out, s.DebugString());
                                    }),
                      ")");
}

absl::Status CheckCompatible(absl::Span<const TensorSpec> specs,
                             absl::Span<const devices::Tensor> tensors,
                             absl::string_view what) {
  if (specs.size() != tensors.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " are ", tensors.size(), " tensors, but ",
                     specs.size(), " are declared: ", SpecsDebugString(specs)));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].IsCompatibleWith(tensors[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": tensor ", i, " is ", devices::DTypeName(tensors[i].dtype()),
          tensors[i].shape().DebugString(), ", which does not match ",
          specs[i].DebugString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace distribute
