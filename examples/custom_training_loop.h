// The custom training loop of TF's distributed-training guide, in C++: a
// MirroredStrategy over every device of a platform, a variable created in
// its scope, a dataset distributed across the replicas, a replica function
// whose results are reduced across replicas, and the update applied to
// every copy of the variable. It fits y = 3x with one weight.
//
//   devices::RegisterHostPlatform();
//   auto platform = devices::CreatePlatform("host:4");
//   absl::StatusOr<float> w = examples::FitLine(**platform, /*epochs=*/40);
#ifndef EXAMPLES_CUSTOM_TRAINING_LOOP_H_
#define EXAMPLES_CUSTOM_TRAINING_LOOP_H_

#include "absl/status/statusor.h"
#include "devices/platform.h"
#include "distribute/strategy.h"

namespace examples {

// Trains w in y = w x on 64 points of y = 3x (global batch 16, plain
// gradient descent) and returns the learned w. The platform's errors, or
// the strategy's.
absl::StatusOr<float> FitLine(devices::Platform& platform, int epochs);

// The same loop under any strategy (FitLine's is a MirroredStrategy over
// the platform's default devices). Under a multi-worker strategy every
// worker runs it: each reads its share of every global batch, and the
// Reduce sums over every worker's replicas.
absl::StatusOr<float> TrainLine(distribute::Strategy& strategy, int epochs);

}  // namespace examples

#endif  // EXAMPLES_CUSTOM_TRAINING_LOOP_H_
