#include "distribute/input/test_util.h"

#include <utility>

#include "devices/status_macros.h"
#include "gtest/gtest.h"

namespace distribute {
namespace data {
namespace testing {

devices::Tensor Int64s(const std::vector<int64_t>& values,
                       devices::Shape shape) {
  absl::StatusOr<devices::Tensor> t =
      devices::Tensor::FromVector<int64_t>(values, std::move(shape));
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : devices::Tensor();
}

devices::Tensor Int64s(const std::vector<int64_t>& values) {
  return devices::Tensor::FromVector<int64_t>(values);
}

std::vector<int64_t> Values(const devices::Tensor& tensor) {
  return tensor.ToVector<int64_t>();
}

absl::StatusOr<std::vector<Element>> Drain(Iterator& iterator) {
  std::vector<Element> out;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<Element> next, iterator.GetNext());
    if (!next.has_value()) return out;
    out.push_back(std::move(*next));
  }
}

absl::StatusOr<std::vector<Element>> Drain(const Dataset& dataset) {
  std::unique_ptr<Iterator> it = dataset.MakeIterator();
  return Drain(*it);
}

Rows DrainValues(const Dataset& dataset) {
  Rows rows;
  std::unique_ptr<Iterator> it = dataset.MakeIterator();
  while (true) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    if (!next.ok()) {
      ADD_FAILURE() << "GetNext failed: " << next.status();
      return rows;
    }
    if (!next->has_value()) return rows;
    rows.push_back(Values((**next).at(0)));
  }
}

std::vector<int64_t> DrainScalars(const Dataset& dataset) {
  std::vector<int64_t> out;
  for (const std::vector<int64_t>& row : DrainValues(dataset)) {
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

}  // namespace testing
}  // namespace data
}  // namespace distribute
