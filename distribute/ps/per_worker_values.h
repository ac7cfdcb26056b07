// Per-worker values for ParameterServerStrategy, as TF's PerWorkerValues
// that ClusterCoordinator's per-worker resources make
// (coordinator._create_per_worker_resources(fn), the way TF programs keep
// a variable or an accumulator on each worker): every worker holds its own
// value, and the functions the coordinator schedules get the value of the
// worker they run on.
//
// As with worker functions and datasets, C++ cannot ship the function that
// makes the value, so every worker registers it by name. The coordinator
// makes a PerWorkerValues by name and passes its handle to the functions it
// schedules; a worker makes its value the first time a function uses it
// there, with the worker's InputContext (input_pipeline_id: its index among
// the workers), and again after it restarted (TF re-creates a restarted
// worker's resources too). The tensors a function gets share the worker's
// buffers: writing into them updates the worker's value for later calls.
// Those buffers are not locked: functions that run at once on one worker
// must not write the same value (a ClusterCoordinator runs one call at a
// time on each worker). A worker keeps each value for its life, as it
// keeps per-worker iterators; make one PerWorkerValues per resource, not
// one per step.
//
// Example (each worker):
//   RegisterWorkerValue(*server, "seen",
//       [](const InputContext&) -> absl::StatusOr<std::vector<Tensor>> {
//         return std::vector<Tensor>{Tensor::FromVector<int64_t>({0})};
//       });
//   RegisterWorkerFunction(*server, "count",
//       [&server](PsClient&, std::vector<Tensor> args)
//           -> absl::StatusOr<std::vector<Tensor>> {
//         auto seen = LocalValue(*server, args[0]);  // this worker's
//         if (!seen.ok()) return seen.status();
//         (*seen)[0].data<int64_t>()[0] += 1;
//         return std::vector<Tensor>{};
//       });
// Example (coordinator):
//   PerWorkerValues seen = *PerWorkerValues::Create("seen");
//   coordinator->Schedule("count", {seen.handle()});
#ifndef DISTRIBUTE_PS_PER_WORKER_VALUES_H_
#define DISTRIBUTE_PS_PER_WORKER_VALUES_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/tensor.h"
#include "distribute/input/input_context.h"
#include "distribute/server/server.h"

namespace distribute {
namespace ps {

using WorkerValueFn =
    std::function<absl::StatusOr<std::vector<devices::Tensor>>(
        const InputContext&)>;

// On a worker: registers the value function `name` on its server.
// INVALID_ARGUMENT for an empty name (or one with a newline) or function;
// ALREADY_EXISTS for a name registered before.
absl::Status RegisterWorkerValue(Server& server, absl::string_view name,
                                 WorkerValueFn fn);

// A value of each worker, as the coordinator hands it to scheduled
// functions.
class PerWorkerValues {
 public:
  // New values of the worker value function `name` (no worker is asked:
  // each makes its own when a function first uses it). INVALID_ARGUMENT for
  // an empty name or one with a newline.
  static absl::StatusOr<PerWorkerValues> Create(absl::string_view name);

  // The argument to pass to Schedule for functions that use it.
  const devices::Tensor& handle() const { return handle_; }
  const std::string& name() const { return name_; }

 private:
  PerWorkerValues(std::string name, devices::Tensor handle)
      : name_(std::move(name)), handle_(std::move(handle)) {}
  std::string name_;
  devices::Tensor handle_;
};

// In a worker function: this worker's value of `handle` (`server` is the
// worker's own), made on first use; its tensors share the worker's
// buffers. NOT_FOUND naming the function when the worker has not
// registered it; INVALID_ARGUMENT for a tensor that is not a
// PerWorkerValues handle; the errors of the value function (tried again on
// the next use).
absl::StatusOr<std::vector<devices::Tensor>> LocalValue(
    Server& server, const devices::Tensor& handle);

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_PER_WORKER_VALUES_H_
