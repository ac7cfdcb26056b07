#include "tests/multi_worker_test_util.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace distsim_test {

distsim::TrainOptions SmallClassifier(int64_t steps) {
  distsim::TrainOptions options;
  options.steps = steps;
  options.global_batch = 24;
  options.num_features = 16;
  options.num_classes = 4;
  options.hidden = {32};
  options.optimizer = "sgd";
  options.learning_rate = 0.1;
  return options;
}

absl::Status WriteWeights(const std::string& path,
                          const std::vector<devices::Tensor>& weights) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  for (const devices::Tensor& t : weights) {
    if (t.dtype() != devices::DType::kFloat32 || !t.has_data()) {
      return absl::InvalidArgumentError(
          absl::StrCat("WriteWeights writes float32 tensors with data, not ",
                       t.DebugString()));
    }
    out.write(static_cast<const char*>(t.raw_data()),
              static_cast<std::streamsize>(t.bytes()));
  }
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> ReadWeights(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace distsim_test
