#include "distribute/models/synthetic_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/random_kernels.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "distribute/models/checks.h"

namespace distribute {
namespace models {
namespace {

using devices::DType;
using devices::Shape;
using devices::Tensor;

// The SplitMix64 output for stream `stream` of `seed`.
uint64_t DeriveSeed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + (stream + 1) * 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

absl::StatusOr<Tensor> Normal(int64_t rows, int64_t cols, uint64_t seed,
                              double stddev) {
  ASSIGN_OR_RETURN(Shape shape, Shape::Make({rows, cols}));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Host(DType::kFloat32, shape));
  ASSIGN_OR_RETURN(devices::KernelCost cost,
                   devices::RandomNormal(seed, /*mean=*/0, stddev, t));
  return t;
}

absl::Status CheckSizes(int64_t num_examples, int64_t num_features,
                        int64_t num_classes) {
  if (num_examples < 1 || num_features < 1 || num_classes < 2 ||
      num_classes > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a classification data set needs num_examples >= 1, num_features "
        ">= 1 and 2 <= num_classes < 2^31, got ",
        num_examples, ", ", num_features, " and ", num_classes));
  }
  return absl::OkStatus();
}

// The teacher's label of one example: the first class of largest logit
// e + x W, summed in double in this order. `logits` has room for C.
int32_t TeacherLabel(const float* x, const float* e, const float* w, int64_t F,
                     int64_t C, double* logits) {
  for (int64_t c = 0; c < C; ++c) logits[c] = static_cast<double>(e[c]);
  for (int64_t f = 0; f < F; ++f) {
    const double xf = static_cast<double>(x[f]);
    for (int64_t c = 0; c < C; ++c) {
      logits[c] += xf * static_cast<double>(w[f * C + c]);
    }
  }
  int64_t best = 0;
  for (int64_t c = 1; c < C; ++c) {
    if (logits[c] > logits[best]) best = c;
  }
  return static_cast<int32_t>(best);
}

}  // namespace

absl::StatusOr<ClassificationData> MakeClassificationData(int64_t num_examples,
                                                          int64_t num_features,
                                                          int64_t num_classes,
                                                          uint64_t seed) {
  RETURN_IF_ERROR(CheckSizes(num_examples, num_features, num_classes));
  ClassificationData data;
  ASSIGN_OR_RETURN(data.features, Normal(num_examples, num_features,
                                         DeriveSeed(seed, 0), 1.0));
  ASSIGN_OR_RETURN(Tensor teacher,
                   Normal(num_features, num_classes, DeriveSeed(seed, 1),
                          1.0 / std::sqrt(static_cast<double>(num_features))));
  ASSIGN_OR_RETURN(Tensor noise, Normal(num_examples, num_classes,
                                        DeriveSeed(seed, 2), kTeacherNoise));
  ASSIGN_OR_RETURN(data.labels,
                   Tensor::Host(DType::kInt32, Shape({num_examples})));

  const float* x = data.features.data<float>();
  const float* w = teacher.data<float>();
  const float* e = noise.data<float>();
  int32_t* labels = data.labels.data<int32_t>();
  std::vector<double> logits(static_cast<size_t>(num_classes));
  for (int64_t n = 0; n < num_examples; ++n) {
    labels[n] = TeacherLabel(x + n * num_features, e + n * num_classes, w,
                             num_features, num_classes, logits.data());
  }
  return data;
}

absl::StatusOr<ClassificationSource> ClassificationSource::Create(
    int64_t num_examples, int64_t num_features, int64_t num_classes,
    uint64_t seed) {
  RETURN_IF_ERROR(CheckSizes(num_examples, num_features, num_classes));
  ClassificationSource source;
  source.num_features_ = num_features;
  source.num_classes_ = num_classes;
  source.feature_seed_ = DeriveSeed(seed, 0);
  source.noise_seed_ = DeriveSeed(seed, 2);
  ASSIGN_OR_RETURN(source.teacher_,
                   Normal(num_features, num_classes, DeriveSeed(seed, 1),
                          1.0 / std::sqrt(static_cast<double>(num_features))));
  return source;
}

int32_t ClassificationSource::Example(int64_t index, float* features) const {
  const int64_t F = num_features_;
  const int64_t C = num_classes_;
  // As MakeClassificationData: every random value rounded to float32
  // (RandomNormal's mean + stddev * z), then the same label.
  std::vector<double> z(static_cast<size_t>(std::max(F, C)));
  std::vector<float> noise(static_cast<size_t>(C));
  std::vector<double> logits(static_cast<size_t>(C));
  devices::StandardNormalsAt(noise_seed_, index * C, C, z.data());
  for (int64_t c = 0; c < C; ++c) {
    noise[c] = static_cast<float>(0.0 + kTeacherNoise * z[c]);
  }
  devices::StandardNormalsAt(feature_seed_, index * F, F, z.data());
  for (int64_t f = 0; f < F; ++f) {
    features[f] = static_cast<float>(0.0 + 1.0 * z[f]);
  }
  return TeacherLabel(features, noise.data(), teacher_.data<float>(), F, C,
                      logits.data());
}

absl::StatusOr<ClassificationData> SliceExamples(const ClassificationData& data,
                                                 int64_t begin, int64_t end) {
  constexpr absl::string_view kOp = "SliceExamples";
  RETURN_IF_ERROR(CheckRank(kOp, "features", data.features, 2));
  const int64_t num_examples = data.features.shape().dim(0);
  const int64_t num_features = data.features.shape().dim(1);
  RETURN_IF_ERROR(CheckShapeAndDType(kOp, "features", data.features,
                                     DType::kFloat32, data.features.shape()));
  RETURN_IF_ERROR(CheckShapeAndDType(kOp, "labels", data.labels, DType::kInt32,
                                     Shape({num_examples})));
  if (begin < 0 || begin > end || end > num_examples) {
    return absl::InvalidArgumentError(absl::StrCat(
        kOp, ": [", begin, ", ", end, ") is not a range of the ", num_examples,
        " examples; need 0 <= begin <= end <= ", num_examples));
  }
  RETURN_IF_ERROR(CheckHostData(kOp, "features", data.features));
  RETURN_IF_ERROR(CheckHostData(kOp, "labels", data.labels));
  const int64_t rows = end - begin;
  ClassificationData slice;
  ASSIGN_OR_RETURN(slice.features,
                   Tensor::Host(DType::kFloat32, Shape({rows, num_features})));
  ASSIGN_OR_RETURN(slice.labels, Tensor::Host(DType::kInt32, Shape({rows})));
  if (rows > 0) {
    std::memcpy(slice.features.data<float>(),
                data.features.data<float>() + begin * num_features,
                slice.features.bytes());
    std::memcpy(slice.labels.data<int32_t>(),
                data.labels.data<int32_t>() + begin, slice.labels.bytes());
  }
  return slice;
}

}  // namespace models
}  // namespace distribute
