// What the multi-worker tests and their worker binaries (mw_worker,
// ckpt_worker) share: the small classifier they train and the file format of
// its weights. (The workers' flags are tools/flags/flags.h's.)
//
//   distsim::TrainOptions options = distsim_test::SmallClassifier(4);
//   absl::Status s = distsim_test::WriteWeights("/tmp/w.bin", result.weights);
//   absl::StatusOr<std::vector<float>> w =
//   distsim_test::ReadWeights("/tmp/w.bin");
#ifndef TESTS_MULTI_WORKER_TEST_UTIL_H_
#define TESTS_MULTI_WORKER_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/tensor.h"
#include "tools/distsim/classifier_training.h"

namespace distsim_test {

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
