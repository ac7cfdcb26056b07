// What the multi-worker tests and their worker binaries (mw_worker,
// ckpt_worker) share: the small classifier they train, the file format of
// its weights, and the workers' --name=value flags.
//
//   absl::StatusOr<distsim_test::WorkerFlags> flags =
//       distsim_test::WorkerFlags::Parse(argc, argv);
//   absl::StatusOr<int64_t> steps = flags->Int("steps", 4);
//   distsim::TrainOptions options = distsim_test::SmallClassifier(4);
//   absl::Status s = distsim_test::WriteWeights("/tmp/w.bin", result.weights);
//   absl::StatusOr<std::vector<float>> w =
//   distsim_test::ReadWeights("/tmp/w.bin");
#ifndef TESTS_MULTI_WORKER_TEST_UTIL_H_
#define TESTS_MULTI_WORKER_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/tensor.h"
#include "tools/distsim/classifier_training.h"

namespace distsim_test {

// A worker binary's flags, each given as --name=value.
class WorkerFlags {
 public:
  // INVALID_ARGUMENT naming the first argument not of the form --name=value.
  static absl::StatusOr<WorkerFlags> Parse(int argc, char** argv);

  // The value of --name, or nullopt if it was not given.
  std::optional<std::string> Get(const std::string& name) const;
  // The integer value of --name, or `fallback` if it was not given;
  // INVALID_ARGUMENT if the value is not an integer.
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t fallback) const;

 private:
  std::map<std::string, std::string> values_;
};

// A classifier small enough to train a few steps in well under a second:
// 16 features, one hidden layer of 32, 4 classes, global batch 24 (which
// 1, 2 and 3 replicas divide), SGD with momentum.
distsim::TrainOptions SmallClassifier(int64_t steps);

// Writes the float32 weights back to back (host byte order).
// INVALID_ARGUMENT for a non-float32 or data-less tensor; UNAVAILABLE if
// the file cannot be written.
absl::Status WriteWeights(const std::string& path,
                          const std::vector<devices::Tensor>& weights);
// What WriteWeights wrote, as one flat list; NOT_FOUND if the file cannot be
// read.
absl::StatusOr<std::vector<float>> ReadWeights(const std::string& path);

}  // namespace distsim_test

#endif  // TESTS_MULTI_WORKER_TEST_UTIL_H_
