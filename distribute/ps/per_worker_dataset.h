// Per-worker datasets for ParameterServerStrategy, as TF's
// ClusterCoordinator.create_per_worker_dataset(dataset_fn) and iter() on
// it: every worker makes its own input pipeline from a dataset function,
// and the functions the coordinator schedules there read from that
// worker's iterator.
//
// C++ cannot ship a dataset function to the workers, so, like worker
// functions, every worker registers its dataset functions by name (the same
// binary on every worker). The coordinator makes an iterator by name and
// passes its handle to the functions it schedules; a worker makes its
// iterator from the dataset function the first time a function uses it
// there, with the worker's InputContext (num_input_pipelines: the workers;
// input_pipeline_id: this worker's index), and again from the start after
// it restarted (TF re-creates a restarted worker's iterators too).
//
// Example (each worker):
//   RegisterWorkerDataset(*server, "examples",
//       [](const InputContext& ctx) -> absl::StatusOr<data::Dataset> {
//         return data::Dataset::Range(1000).Shard(ctx.num_input_pipelines(),
//                                                 ctx.input_pipeline_id());
//       });
//   RegisterWorkerFunction(*server, "train_step",
//       [&server](PsClient& ps, std::vector<devices::Tensor> args)
//           -> absl::StatusOr<std::vector<devices::Tensor>> {
//         auto batch = NextElement(*server, args[0]);  // this worker's
//         ...
//       });
// Example (coordinator):
//   PerWorkerIterator it = *coordinator->CreatePerWorkerDataset("examples");
//   coordinator->Schedule("train_step", {it.handle()});
#ifndef DISTRIBUTE_PS_PER_WORKER_DATASET_H_
#define DISTRIBUTE_PS_PER_WORKER_DATASET_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/tensor.h"
#include "distribute/input/dataset.h"
#include "distribute/input/input_context.h"
#include "distribute/server/server.h"

namespace distribute {
namespace ps {

using WorkerDatasetFn =
    std::function<absl::StatusOr<data::Dataset>(const InputContext&)>;

// On a worker: registers the dataset function `name` on its server.
// INVALID_ARGUMENT for an empty name or function; ALREADY_EXISTS for a name
// registered before.
absl::Status RegisterWorkerDataset(Server& server, absl::string_view name,
                                   WorkerDatasetFn fn);

// An iterator over a worker dataset, one per worker, as the coordinator
// hands it to scheduled functions.
class PerWorkerIterator {
 public:
  // A new iterator over the worker dataset `dataset` (no worker is asked:
  // each makes its own when a function first uses it). INVALID_ARGUMENT for
  // an empty name or one with a newline.
  static absl::StatusOr<PerWorkerIterator> Create(absl::string_view dataset);

  // The argument to pass to Schedule for functions that read from it.
  const devices::Tensor& handle() const { return handle_; }
  const std::string& dataset() const { return dataset_; }

 private:
  PerWorkerIterator(std::string dataset, devices::Tensor handle)
      : dataset_(std::move(dataset)), handle_(std::move(handle)) {}
  std::string dataset_;
  devices::Tensor handle_;
};

// In a worker function: the next element of the iterator `handle` on this
// worker (`server` is the worker's own); nullopt at its end. NOT_FOUND
// naming the dataset when the worker has not registered it;
// INVALID_ARGUMENT for a tensor that is not an iterator handle; the errors
// of the dataset function and of the pipeline.
absl::StatusOr<std::optional<data::Element>> NextElement(
    Server& server, const devices::Tensor& handle);

namespace ps_internal {
// The InputContext of a worker's per-worker resources: one pipeline per
// worker task of the server's cluster, this worker's index (0 off a worker).
absl::StatusOr<InputContext> WorkerInputContext(const Server& server);

// A new handle of a per-worker resource (an iterator, a value) made by
// the worker function `name`: "<name>\n<id>" as a name tensor, the id
// unique across coordinators (a restarted coordinator must not continue an
// old one's resources on a worker that lived on). INVALID_ARGUMENT `what`
// for an empty name or one with a newline.
absl::StatusOr<devices::Tensor> NewPerWorkerHandle(absl::string_view name,
                                                   absl::string_view what);

// A per-worker resource handle ("<name>\n<id>", a name tensor) and the
// function of `server` that serves it (`prefix` + name): runs the function
// with the id and returns its outputs. INVALID_ARGUMENT naming `handle_kind`
// for a tensor that is no such handle; NOT_FOUND naming the
// `resource_kind` and `register_with` when the worker lacks it.
absl::StatusOr<std::vector<devices::Tensor>> RunPerWorkerFunction(
    Server& server, const devices::Tensor& handle, absl::string_view prefix,
    absl::string_view handle_kind, absl::string_view resource_kind,
    absl::string_view register_with);
}  // namespace ps_internal

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_PER_WORKER_DATASET_H_
