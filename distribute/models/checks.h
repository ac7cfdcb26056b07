// Argument checks shared by the model library's ops, with
// uniform messages that name the op, the tensor's role and what to change.
//
// Example:
//   RETURN_IF_ERROR(CheckModelDType("Dense", "x", x.dtype()));
//   RETURN_IF_ERROR(CheckShapeAndDType("Dense", "kernel", w,
//                                             x.dtype(), {in, out}));
#ifndef DISTRIBUTE_MODELS_CHECKS_H_
#define DISTRIBUTE_MODELS_CHECKS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "devices/dtype.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"

namespace distribute {
namespace models {

// INVALID_ARGUMENT unless `dtype` is float32 or float64.
absl::Status CheckModelDType(absl::string_view op, absl::string_view role,
                             devices::DType dtype);

// INVALID_ARGUMENT unless `tensor` has rank `rank`.
absl::Status CheckRank(absl::string_view op, absl::string_view role,
                       const devices::Tensor& tensor, int rank);

// INVALID_ARGUMENT unless `tensor` has `dtype` and `shape`.
absl::Status CheckShapeAndDType(absl::string_view op, absl::string_view role,
                                const devices::Tensor& tensor,
                                devices::DType dtype,
                                const devices::Shape& shape);

// FAILED_PRECONDITION unless `tensor` has data in host memory.
absl::Status CheckHostData(absl::string_view op, absl::string_view role,
                           const devices::Tensor& tensor);

}  // namespace models
}  // namespace distribute

#endif  // DISTRIBUTE_MODELS_CHECKS_H_
