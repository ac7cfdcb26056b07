// Tensor: a dtype, a shape, the name of the device it lives on, and a
// reference-counted buffer. Copies of a Tensor share the buffer (as in
// TensorFlow); the buffer goes back to its Allocator when the last Tensor
// referencing it dies. Shape-only tensors carry no buffer at all: timing-only
// simulated devices compute with them.
//
// Example:
//   absl::StatusOr<devices::Tensor> t =
//       devices::Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   t->matrix<float>()(1, 2);        // 6
//   t->flat<float>().sum();          // 21
//   devices::Tensor view = *t->Reshape({3, 2});  // Shares the buffer.
#ifndef DEVICES_TENSOR_H_
#define DEVICES_TENSOR_H_

#include <Eigen/Core>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "devices/allocator.h"
#include "devices/dtype.h"
#include "devices/half.h"
#include "devices/shape.h"
#include "devices/status_macros.h"

// Lets Eigen maps hold the 16-bit storage types (element access only; do
// arithmetic after converting to float).
namespace Eigen {
template <>
struct NumTraits<devices::Float16> : GenericNumTraits<devices::Float16> {};
template <>
struct NumTraits<devices::BFloat16> : GenericNumTraits<devices::BFloat16> {};
}  // namespace Eigen

namespace devices {

// Memory obtained from an Allocator, returned to it on destruction.
class Buffer {
 public:
  Buffer(std::shared_ptr<Allocator> allocator, void* data, size_t bytes)
      : allocator_(std::move(allocator)), data_(data), bytes_(bytes) {}
  ~Buffer() { allocator_->Deallocate(data_, bytes_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const Allocator& allocator() const { return *allocator_; }

 private:
  const std::shared_ptr<Allocator> allocator_;
  void* const data_;
  const size_t bytes_;
};

template <typename T>
using FlatMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstFlatMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using MatrixMap = Eigen::Map<
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <typename T>
using ConstMatrixMap = Eigen::Map<
    const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

class Tensor {
 public:
  // An empty float32 scalar with no data on no device.
  Tensor() = default;

  // A tensor without a buffer, for timing-only simulation: has_data() is
  // false and raw_data() is nullptr, bytes() is still the logical size.
  static Tensor ShapeOnly(DType dtype, Shape shape, std::string device);

  // Allocates dtype x shape from `allocator` for the device named `device`.
  // RESOURCE_EXHAUSTED from the allocator. With a kAccountingOnly allocator
  // the tensor reserves memory but has no data (has_data() is false).
  static absl::StatusOr<Tensor> Allocate(std::shared_ptr<Allocator> allocator,
                                         DType dtype, Shape shape,
                                         std::string device);

  // Allocates (uninitialised) host heap memory, 64-byte aligned. The tensor
  // is on no device: device() is "".
  static absl::StatusOr<Tensor> Host(DType dtype, Shape shape);

  // A host tensor holding `values` (row-major) with `shape`.
  // INVALID_ARGUMENT if values.size() != shape.num_elements().
  template <typename T>
  static absl::StatusOr<Tensor> FromVector(const std::vector<T>& values,
                                           Shape shape);
  // A rank-1 host tensor holding `values`; a test convenience that aborts
  // if the host heap is exhausted (the Shape overload returns the error).
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return shape_.num_elements(); }
  // Logical size: num_elements() * DTypeSize(dtype()).
  size_t bytes() const {
    return static_cast<size_t>(shape_.num_elements()) * DTypeSize(dtype_);
  }
  const std::string& device() const { return device_; }

  // False for shape-only tensors and tensors of kAccountingOnly allocators.
  bool has_data() const {
    return buffer_ != nullptr &&
           buffer_->allocator().memory_space() != MemorySpace::kAccountingOnly;
  }
  // True when the data is in host memory (flat(), matrix(), data() work).
  bool host_accessible() const {
    return buffer_ != nullptr &&
           buffer_->allocator().memory_space() == MemorySpace::kHost;
  }
  // nullptr when !has_data().
  void* raw_data() const { return has_data() ? buffer_->data() : nullptr; }
  // How many Tensors share this buffer (0 without a buffer).
  int64_t buffer_use_count() const { return buffer_.use_count(); }

  // Typed access to host data. Preconditions (asserted; programming errors):
  // host_accessible() and dtype() == kDTypeOf<T>.
  template <typename T>
  T* data() const {
    assert(host_accessible() && "Tensor::data() needs host data");
    assert(dtype_ == kDTypeOf<T> && "Tensor::data<T>() with the wrong T");
    return static_cast<T*>(buffer_->data());
  }
  template <typename T>
  FlatMap<T> flat() {
    return FlatMap<T>(data<T>(), shape_.num_elements());
  }
  template <typename T>
  ConstFlatMap<T> flat() const {
    return ConstFlatMap<T>(data<T>(), shape_.num_elements());
  }
  // Additional precondition: rank() == 2. Row-major.
  template <typename T>
  MatrixMap<T> matrix() {
    assert(shape_.rank() == 2 && "Tensor::matrix() needs a rank-2 tensor");
    return MatrixMap<T>(data<T>(), shape_.dim(0), shape_.dim(1));
  }
  template <typename T>
  ConstMatrixMap<T> matrix() const {
    assert(shape_.rank() == 2 && "Tensor::matrix() needs a rank-2 tensor");
    return ConstMatrixMap<T>(data<T>(), shape_.dim(0), shape_.dim(1));
  }
  // Copies the host data out (same preconditions as data()).
  template <typename T>
  std::vector<T> ToVector() const;

  // A tensor with `shape` sharing this buffer. INVALID_ARGUMENT if the
  // number of elements differs.
  absl::StatusOr<Tensor> Reshape(Shape shape) const;

  bool SameShapeAndType(const Tensor& other) const {
    return dtype_ == other.dtype_ && shape_ == other.shape_;
  }

  // "float32[2,3] on /job:localhost/replica:0/task:0/device:CPU:0", with
  // " (shape only)" for tensors without data.
  std::string DebugString() const;

 private:
  Tensor(DType dtype, Shape shape, std::string device,
         std::shared_ptr<Buffer> buffer)
      : dtype_(dtype),
        shape_(std::move(shape)),
        device_(std::move(device)),
        buffer_(std::move(buffer)) {}

  DType dtype_ = DType::kFloat32;
  Shape shape_;
  std::string device_;
  std::shared_ptr<Buffer> buffer_;
};

template <typename T>
absl::StatusOr<Tensor> Tensor::FromVector(const std::vector<T>& values,
                                          Shape shape) {
  if (static_cast<int64_t>(values.size()) != shape.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FromVector got ", values.size(), " values for shape ",
                     shape.DebugString(), ", which has ", shape.num_elements(),
                     " elements"));
  }
  ASSIGN_OR_RETURN(Tensor tensor, Host(kDTypeOf<T>, std::move(shape)));
  T* out = tensor.data<T>();
  // Element by element: std::vector<bool> is not contiguous.
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return tensor;
}

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values) {
  absl::StatusOr<Tensor> tensor =
      FromVector(values, Shape({static_cast<int64_t>(values.size())}));
  assert(tensor.ok() && "host heap exhausted");
  return *std::move(tensor);
}

template <typename T>
std::vector<T> Tensor::ToVector() const {
  const T* in = data<T>();
  return std::vector<T>(in, in + shape_.num_elements());
}

}  // namespace devices

#endif  // DEVICES_TENSOR_H_
