// Dataset elements and the tensor surgery the input pipeline needs on them.
//
// An Element is a flat tuple of host tensors ("components"), as a tf.data
// element is a nest of tensors: {features, labels}, or a single tensor. Every
// dataset op keeps the number of components and their order; Batch, Rebatch
// and the distribution helpers work component by component along dim 0.
//
// Example:
//   Element e = {Tensor::FromVector<float>({1, 2, 3}),       // features [3]
//                Tensor::FromVector<int64_t>({7})};          // label    [1]
//   absl::StatusOr<Element> batch = StackElements({e, e});   // [2,3], [2,1]
//   absl::StatusOr<Element> rows = SliceElement(*batch, 1, 2);  // [1,3], [1,1]
#ifndef DISTRIBUTE_INPUT_ELEMENT_H_
#define DISTRIBUTE_INPUT_ELEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "devices/tensor.h"
#include "distribute/tensor_spec.h"

namespace distribute {
namespace data {

// The components of one dataset element, in order. Copies share the tensor
// buffers (devices::Tensor is a reference-counted handle).
using Element = std::vector<devices::Tensor>;

// INVALID_ARGUMENT unless every component is a host tensor with data
// (Tensor::Host, FromVector): the input pipeline runs on the host.
absl::Status CheckHostElement(const Element& element);

// Stacks `elements` along a new dim 0: component c of the result has shape
// [elements.size()] + shape(elements[0][c]). Every element needs the same
// number of components, and component c the same dtype and shape in every
// element; INVALID_ARGUMENT naming the component and the element otherwise,
// and for an empty `elements` or non-host tensors.
absl::StatusOr<Element> StackElements(absl::Span<const Element> elements);

// The common dim 0 of all components. INVALID_ARGUMENT when the element has
// no components, a component is a scalar, or two components disagree.
absl::StatusOr<int64_t> BatchDim(const Element& element);

// Rows [begin, end) of every component along dim 0, copied into new host
// tensors (end == begin gives zero rows). INVALID_ARGUMENT unless
// 0 <= begin <= end <= BatchDim(element).
absl::StatusOr<Element> SliceElement(const Element& element, int64_t begin,
                                     int64_t end);

// Row `row` of every component with dim 0 removed (shape [2,3] gives [3]);
// what FromTensorSlices yields. INVALID_ARGUMENT as SliceElement.
absl::StatusOr<Element> UnstackRow(const Element& element, int64_t row);

// Concatenates `parts` along dim 0. Every part needs the same number of
// components, and component c the same dtype and the same dims after dim 0;
// INVALID_ARGUMENT otherwise (naming the part and component) and for an
// empty `parts`.
absl::StatusOr<Element> ConcatElements(absl::Span<const Element> parts);

// A batch with zero rows shaped like `element`: component c has shape
// [0] + dims(element[c])[1:]. What a replica that gets no data receives.
// INVALID_ARGUMENT for scalar components.
absl::StatusOr<Element> EmptyBatchLike(const Element& element);

// "(float32[2,3], int64[2])".
std::string ElementDebugString(const Element& element);

// A dataset element's structure: one TensorSpec (tensor_spec.h) per
// component (TF's element_spec); a dim of kUnknownDim is not fixed by the
// pipeline (TF's None), as the batch dim of a Batch whose last batch may
// be partial.
using ElementSpec = std::vector<TensorSpec>;

// The exact spec of `element`'s components.
ElementSpec SpecOf(const Element& element);
// "(float32[?,3], int64[?])"; ? for an unknown dim.
std::string ElementSpecDebugString(const ElementSpec& spec);

}  // namespace data
}  // namespace distribute

#endif  // DISTRIBUTE_INPUT_ELEMENT_H_
