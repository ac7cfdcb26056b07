#include "distribute/ps/per_worker_values.h"

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "devices/status_macros.h"
#include "distribute/ps/per_worker_dataset.h"
#include "distribute/ps/ps_client.h"

namespace distribute {
namespace ps {
namespace {

constexpr char kFunctionPrefix[] = "__ps_value.";

// A worker's values of one value function, made on first use.
struct WorkerValues {
  WorkerValueFn fn;
  InputContext context;
  absl::Mutex mu;
  std::map<std::string, std::vector<devices::Tensor>> by_id ABSL_GUARDED_BY(mu);
};

}  // namespace

absl::Status RegisterWorkerValue(Server& server, absl::string_view name,
                                 WorkerValueFn fn) {
  if (name.empty() || absl::StrContains(name, '\n') || !fn) {
    return absl::InvalidArgumentError(
        "RegisterWorkerValue needs a name (without newlines) and a value "
        "function");
  }
  ASSIGN_OR_RETURN(InputContext context,
                   ps_internal::WorkerInputContext(server));
  auto state = std::make_shared<WorkerValues>();
  state->fn = std::move(fn);
  state->context = context;
  return server.function_registry().Register(
      absl::StrCat(kFunctionPrefix, name),
      [state](std::vector<devices::Tensor> args)
          -> absl::StatusOr<std::vector<devices::Tensor>> {
        if (args.size() != 1) {
          return absl::InvalidArgumentError("expected a per-worker value id");
        }
        ASSIGN_OR_RETURN(std::string id, TensorName(args[0]));
        // Made under the lock: two calls of one worker that use a new value
        // at once get the same one.
        absl::MutexLock lock(&state->mu);
        auto found = state->by_id.find(id);
        if (found != state->by_id.end()) return found->second;
        ASSIGN_OR_RETURN(std::vector<devices::Tensor> made,
                         state->fn(state->context));
        for (const devices::Tensor& t : made) {
          if (!t.host_accessible()) {
            return absl::InvalidArgumentError(
                "a per-worker value function returned a tensor without host "
                "data; return host tensors");
          }
        }
        return state->by_id.emplace(id, std::move(made)).first->second;
      });
}

absl::StatusOr<PerWorkerValues> PerWorkerValues::Create(
    absl::string_view name) {
  ASSIGN_OR_RETURN(
      devices::Tensor handle,
      ps_internal::NewPerWorkerHandle(
          name,
          "per-worker values need the name of a worker value function (without "
          "newlines)"));
  return PerWorkerValues(std::string(name), std::move(handle));
}

absl::StatusOr<std::vector<devices::Tensor>> LocalValue(
    Server& server, const devices::Tensor& handle) {
  return ps_internal::RunPerWorkerFunction(
      server, handle, kFunctionPrefix,
      "a per-worker value handle (PerWorkerValues::handle)", "value function",
      "RegisterWorkerValue");
}

}  // namespace ps
}  // namespace distribute
