#include "devices/tensor.h"

#include "devices/status_macros.h"

namespace devices {

Tensor Tensor::ShapeOnly(DType dtype, Shape shape, std::string device) {
  return Tensor(dtype, std::move(shape), std::move(device), nullptr);
}

absl::StatusOr<Tensor> Tensor::Allocate(std::shared_ptr<Allocator> allocator,
                                        DType dtype, Shape shape,
                                        std::string device) {
  const size_t bytes =
      static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  if (shape.num_elements() != 0 &&
      bytes / DTypeSize(dtype) != static_cast<size_t>(shape.num_elements())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory on ", allocator->name(), ": ", DTypeName(dtype),
        shape.DebugString(), " needs more bytes than fit in size_t"));
  }
  ASSIGN_OR_RETURN(void* data, allocator->Allocate(bytes));
  auto buffer = std::make_shared<Buffer>(std::move(allocator), data, bytes);
  return Tensor(dtype, std::move(shape), std::move(device), std::move(buffer));
}

absl::StatusOr<Tensor> Tensor::Host(DType dtype, Shape shape) {
  return Allocate(HostHeapAllocator(), dtype, std::move(shape), "");
}

absl::StatusOr<Tensor> Tensor::Reshape(Shape shape) const {
  if (shape.num_elements() != shape_.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reshape ", shape_.DebugString(), " (", shape_.num_elements(),
        " elements) to ", shape.DebugString(), " (", shape.num_elements(),
        " elements); the number of elements must stay the same"));
  }
  return Tensor(dtype_, std::move(shape), device_, buffer_);
}

std::string Tensor::DebugString() const {
  return absl::StrCat(DTypeName(dtype_), shape_.DebugString(), " on ",
                      device_.empty() ? "host heap" : device_,
                      has_data() ? "" : " (shape only)");
}

}  // namespace devices
