#include "distribute/input/element.h"

#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/dtype.h"
#include "devices/shape.h"
#include "devices/status_macros.h"

namespace distribute {
namespace data {
namespace {

using devices::Shape;
using devices::Tensor;

// The shape of one row (dims after dim 0). Precondition: rank >= 1.
absl::StatusOr<Shape> RowShape(const Tensor& t) {
  return Shape::Make(t.shape().dims().subspan(1));
}

// Bytes of one row of `t`. Precondition: rank >= 1 and RowShape is valid.
size_t RowBytes(const Tensor& t, const Shape& row_shape) {
  return static_cast<size_t>(row_shape.num_elements()) *
         devices::DTypeSize(t.dtype());
}

absl::StatusOr<Shape> WithLeadingDim(int64_t dim0, const Shape& row_shape) {
  std::vector<int64_t> dims;
  dims.reserve(static_cast<size_t>(row_shape.rank()) + 1);
  dims.push_back(dim0);
  for (int64_t d : row_shape.dims()) dims.push_back(d);
  return Shape::Make(dims);
}

void CopyBytes(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

}  // namespace

absl::Status CheckHostElement(const Element& element) {
  for (size_t c = 0; c < element.size(); ++c) {
    if (!element[c].host_accessible()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", c, " (", element[c].DebugString(),
          ") is not a host tensor with data; the input pipeline works on "
          "host tensors (devices::Tensor::Host or FromVector)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Element> StackElements(absl::Span<const Element> elements) {
  if (elements.empty()) {
    return absl::InvalidArgumentError("cannot stack zero elements");
  }
  const Element& first = elements[0];
  for (size_t e = 0; e < elements.size(); ++e) {
    if (elements[e].size() != first.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot batch elements with different numbers of components: "
          "the first element has ",
          first.size(), " and element ", e, " has ", elements[e].size()));
    }
    RETURN_IF_ERROR(CheckHostElement(elements[e]));
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  Element out;
  out.reserve(first.size());
  for (size_t c = 0; c < first.size(); ++c) {
    const Tensor& proto = first[c];
    for (size_t e = 1; e < elements.size(); ++e) {
      const Tensor& t = elements[e][c];
      if (t.dtype() != proto.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Cannot batch tensors with different dtypes in component ", c,
            ". First element had dtype ", devices::DTypeName(proto.dtype()),
            " and element ", e, " had dtype ", devices::DTypeName(t.dtype()),
            "."));
      }
      if (t.shape() != proto.shape()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Cannot batch tensors with different shapes in component ", c,
            ". First element had shape ", proto.shape().DebugString(),
            " and element ", e, " had shape ", t.shape().DebugString(),
            ". Pad or resize the elements (in a Map) to one shape first."));
      }
    }
    ASSIGN_OR_RETURN(Shape shape, WithLeadingDim(n, proto.shape()));
    ASSIGN_OR_RETURN(Tensor stacked, Tensor::Host(proto.dtype(), shape));
    auto* dst = static_cast<std::byte*>(stacked.raw_data());
    const size_t row = proto.bytes();
    for (size_t e = 0; e < elements.size(); ++e) {
      CopyBytes(dst + e * row, elements[e][c].raw_data(), row);
    }
    out.push_back(std::move(stacked));
  }
  return out;
}

absl::StatusOr<int64_t> BatchDim(const Element& element) {
  if (element.empty()) {
    return absl::InvalidArgumentError("the element has no components");
  }
  for (size_t c = 0; c < element.size(); ++c) {
    if (element[c].shape().rank() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", c,
          " is a scalar; it has no batch dimension. Perhaps the dataset is "
          "not batched? Apply Batch() first."));
    }
    if (element[c].shape().dim(0) != element[0].shape().dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the components disagree on the batch dimension: component 0 has ",
          element[0].shape().dim(0), " rows and component ", c, " has ",
          element[c].shape().dim(0)));
    }
  }
  return element[0].shape().dim(0);
}

absl::StatusOr<Element> SliceElement(const Element& element, int64_t begin,
                                     int64_t end) {
  ASSIGN_OR_RETURN(int64_t rows, BatchDim(element));
  if (begin < 0 || begin > end || end > rows) {
    return absl::InvalidArgumentError(absl::StrCat("rows [", begin, ", ", end,
                                                   ") are not within the ",
                                                   rows, " rows of the batch"));
  }
  RETURN_IF_ERROR(CheckHostElement(element));
  Element out;
  out.reserve(element.size());
  for (const Tensor& t : element) {
    ASSIGN_OR_RETURN(Shape row_shape, RowShape(t));
    ASSIGN_OR_RETURN(Shape shape, WithLeadingDim(end - begin, row_shape));
    ASSIGN_OR_RETURN(Tensor slice, Tensor::Host(t.dtype(), shape));
    const size_t row = RowBytes(t, row_shape);
    CopyBytes(slice.raw_data(),
              static_cast<const std::byte*>(t.raw_data()) +
                  static_cast<size_t>(begin) * row,
              static_cast<size_t>(end - begin) * row);
    out.push_back(std::move(slice));
  }
  return out;
}

absl::StatusOr<Element> UnstackRow(const Element& element, int64_t row) {
  ASSIGN_OR_RETURN(Element slice, SliceElement(element, row, row + 1));
  for (Tensor& t : slice) {
    ASSIGN_OR_RETURN(Shape row_shape, RowShape(t));
    ASSIGN_OR_RETURN(Tensor reshaped, t.Reshape(row_shape));
    t = std::move(reshaped);
  }
  return slice;
}

absl::StatusOr<Element> ConcatElements(absl::Span<const Element> parts) {
  if (parts.empty()) {
    return absl::InvalidArgumentError("cannot concatenate zero parts");
  }
  const Element& first = parts[0];
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].size() != first.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot concatenate elements with different numbers of components: "
          "part 0 has ",
          first.size(), " and part ", p, " has ", parts[p].size()));
    }
    ASSIGN_OR_RETURN(int64_t rows, BatchDim(parts[p]));
    RETURN_IF_ERROR(CheckHostElement(parts[p]));
    total += rows;
  }
  Element out;
  out.reserve(first.size());
  for (size_t c = 0; c < first.size(); ++c) {
    ASSIGN_OR_RETURN(Shape row_shape, RowShape(first[c]));
    for (size_t p = 1; p < parts.size(); ++p) {
      const Tensor& t = parts[p][c];
      absl::StatusOr<Shape> other = RowShape(t);
      if (t.dtype() != first[c].dtype() || !other.ok() || *other != row_shape) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cannot concatenate component ", c, ": part 0 is ",
            first[c].DebugString(), " and part ", p, " is ", t.DebugString(),
            "; the dtype and the dims after dim 0 must match"));
      }
    }
    ASSIGN_OR_RETURN(Shape shape, WithLeadingDim(total, row_shape));
    ASSIGN_OR_RETURN(Tensor joined, Tensor::Host(first[c].dtype(), shape));
    auto* dst = static_cast<std::byte*>(joined.raw_data());
    for (const Element& part : parts) {
      CopyBytes(dst, part[c].raw_data(), part[c].bytes());
      dst += part[c].bytes();
    }
    out.push_back(std::move(joined));
  }
  return out;
}

absl::StatusOr<Element> EmptyBatchLike(const Element& element) {
  Element out;
  out.reserve(element.size());
  for (size_t c = 0; c < element.size(); ++c) {
    const Tensor& t = element[c];
    if (t.shape().rank() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("component ", c,
                       " is a scalar; an empty batch needs a batch dimension"));
    }
    ASSIGN_OR_RETURN(Shape row_shape, RowShape(t));
    ASSIGN_OR_RETURN(Shape shape, WithLeadingDim(0, row_shape));
    ASSIGN_OR_RETURN(Tensor empty, Tensor::Host(t.dtype(), shape));
    out.push_back(std::move(empty));
  }
  return out;
}

std::string ElementDebugString(const Element& element) {
  return absl::StrCat("(",
                      absl::StrJoin(element, ", ",
                                    [](std::string* out, const Tensor& t) {
                                      absl::StrAppend(
                                          out, devices::DTypeName(t.dtype()),
                                          t.shape().DebugString());
                                    }),
                      ")");
}

ElementSpec SpecOf(const Element& element) {
  ElementSpec spec;
  for (const Tensor& t : element) spec.push_back(TensorSpec::Of(t));
  return spec;
}

std::string ElementSpecDebugString(const ElementSpec& spec) {
  return absl::StrCat(
      "(",
      absl::StrJoin(spec, ", ",
                    [](std::string* out, const TensorSpec& t) {
                      if (!t.has_known_rank()) {
                        absl::StrAppend(out, devices::DTypeName(t.dtype()),
                                        "[<unknown>]");
                        return;
                      }
                      absl::StrAppend(
                          out, devices::DTypeName(t.dtype()), "[",
                          absl::StrJoin(t.dims(), ",",
                                        [](std::string* o, int64_t d) {
                                          absl::StrAppend(
                                              o, d == kUnknownDim
                                                     ? std::string("?")
                                                     : absl::StrCat(d));
                                        }),
                          "]");
                    }),
      ")");
}

}  // namespace data
}  // namespace distribute
