// A seeded synthetic classification dataset for examples and tests: features
// drawn from a standard normal distribution and labels from a random linear
// teacher plus a little noise, so that a linear model or an MLP can learn
// it (the loss falls clearly within a few dozen SGD steps). The same seed
// gives the same data on every machine.
//
// Example:
//   absl::StatusOr<ClassificationData> data = MakeClassificationData(
//       /*num_examples=*/1024, /*num_features=*/16, /*num_classes=*/4,
//       /*seed=*/42);
//   // data->features: float32 [1024, 16]; data->labels: int32 [1024].
//   absl::StatusOr<ClassificationData> batch = SliceExamples(*data, 0, 64);
#ifndef DISTRIBUTE_MODELS_SYNTHETIC_DATA_H_
#define DISTRIBUTE_MODELS_SYNTHETIC_DATA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "devices/tensor.h"

namespace distribute {
namespace models {

struct ClassificationData {
  devices::Tensor features;  // float32 [num_examples, num_features]
  devices::Tensor labels;    // int32 [num_examples], in [0, num_classes)
};

// The relative size of the teacher's noise: labels are
// argmax_c(x W + kTeacherNoise * e) with W [features, classes] ~ N(0, 1 /
// features) (so each teacher logit has unit variance) and e ~ N(0, 1).
inline constexpr double kTeacherNoise = 0.1;

// Host tensors, generated as follows (every random tensor float32, by
// devices::RandomNormal with seeds derived from `seed` by SplitMix64):
// features x ~ N(0, 1), teacher W and noise e as above; the teacher logits
// are computed in double in a fixed order and the label is the first class
// of largest logit. INVALID_ARGUMENT for num_examples, num_features < 1,
// num_classes < 2 or above 2^31 - 1, or sizes whose product overflows;
// RESOURCE_EXHAUSTED when the host runs out of memory.
absl::StatusOr<ClassificationData> MakeClassificationData(int64_t num_examples,
                                                          int64_t num_features,
                                                          int64_t num_classes,
                                                          uint64_t seed);

// The same examples one at a time, without making the whole set: Example(i)
// is row i of MakeClassificationData(num_examples, num_features,
// num_classes, seed) (tested), for any i >= 0 (rows past num_examples
// continue the same streams). Memory is the teacher's, O(features x
// classes). Thread-compatible; Example is const.
class ClassificationSource {
 public:
  // INVALID_ARGUMENT as MakeClassificationData.
  static absl::StatusOr<ClassificationSource> Create(int64_t num_examples,
                                                     int64_t num_features,
                                                     int64_t num_classes,
                                                     uint64_t seed);
  // Writes example `index`'s num_features features and returns its label.
  int32_t Example(int64_t index, float* features) const;

  int64_t num_features() const { return num_features_; }
  int64_t num_classes() const { return num_classes_; }

 private:
  int64_t num_features_ = 0;
  int64_t num_classes_ = 0;
  uint64_t feature_seed_ = 0;
  uint64_t noise_seed_ = 0;
  devices::Tensor teacher_;  // float32 [num_features, num_classes]
};

// A copy of examples [begin, end) of `data` (rows of features and labels).
// INVALID_ARGUMENT unless 0 <= begin <= end <= the number of examples and
// data has the shapes and dtypes above; FAILED_PRECONDITION without host
// data.
absl::StatusOr<ClassificationData> SliceExamples(const ClassificationData& data,
                                                 int64_t begin, int64_t end);

}  // namespace models
}  // namespace distribute

#endif  // DISTRIBUTE_MODELS_SYNTHETIC_DATA_H_
