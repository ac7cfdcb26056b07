#include "distribute/server/internal/tensor_codec.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/dtype.h"
#include "devices/shape.h"
#include "devices/status_macros.h"

namespace distribute {
namespace server_internal {

absl::Status TensorToProto(const devices::Tensor& tensor,
                           absl::string_view what, server::TensorProto& proto) {
  const size_t bytes = tensor.bytes();
  if (bytes > 0 && !tensor.host_accessible()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is ", tensor.DebugString(),
        ", which has no host data; only host tensors with data can be sent "
        "over RPC (copy it to the host first)"));
  }
  proto.Clear();
  proto.set_dtype(std::string(devices::DTypeName(tensor.dtype())));
  for (int64_t dim : tensor.shape().dims()) proto.add_dims(dim);
  if (bytes > 0) {
    proto.set_data(static_cast<const char*>(tensor.raw_data()), bytes);
  }
  return absl::OkStatus();
}

absl::StatusOr<devices::Tensor> TensorFromProto(
    const server::TensorProto& proto, absl::string_view what) {
  absl::StatusOr<devices::DType> dtype = devices::ParseDType(proto.dtype());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", dtype.status().message()));
  }
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  absl::StatusOr<devices::Shape> shape = devices::Shape::Make(dims);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", shape.status().message()));
  }
  const size_t element_size = devices::DTypeSize(*dtype);
  const uint64_t elements = static_cast<uint64_t>(shape->num_elements());
  if (elements != 0 && proto.data().size() / element_size != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", proto.dtype(), shape->DebugString(), " needs ",
                     elements, " x ", element_size,
                     " bytes but the message carries ", proto.data().size()));
  }
  const size_t bytes = static_cast<size_t>(elements) * element_size;
  if (proto.data().size() != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", proto.dtype(), shape->DebugString(), " needs ", bytes,
        " bytes but the message carries ", proto.data().size()));
  }
  if (*dtype == devices::DType::kBool) {
    for (size_t i = 0; i < bytes; ++i) {
      const unsigned char byte = static_cast<unsigned char>(proto.data()[i]);
      if (byte > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": bool element ", i, " has byte value ",
                         static_cast<int>(byte), "; bools must be 0 or 1"));
      }
    }
  }
  ASSIGN_OR_RETURN(devices::Tensor tensor,
                   devices::Tensor::Host(*dtype, *std::move(shape)));
  if (bytes > 0) std::memcpy(tensor.raw_data(), proto.data().data(), bytes);
  return tensor;
}

}  // namespace server_internal
}  // namespace distribute
