#include "tests/multi_worker_test_util.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace distsim_test {

absl::StatusOr<WorkerFlags> WorkerFlags::Parse(int argc, char** argv) {
  WorkerFlags flags;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.substr(0, 2) != "--" || eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad argument '", arg, "': use --name=value"));
    }
    flags.values_[std::string(arg.substr(2, eq - 2))] =
        std::string(arg.substr(eq + 1));
  }
  return flags;
}

std::optional<std::string> WorkerFlags::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<int64_t> WorkerFlags::Int(const std::string& name,
                                         int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, "=", it->second, " is not an integer"));
  }
  return value;
}

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
