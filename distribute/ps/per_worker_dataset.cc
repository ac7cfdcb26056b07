#include "distribute/ps/per_worker_dataset.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "distribute/ps/ps_client.h"

namespace distribute {
namespace ps {
namespace {

constexpr char kFunctionPrefix[] = "__ps_dataset.";

// A worker's iterators of one dataset, made on first use.
struct WorkerIterators {
  WorkerDatasetFn fn;
  InputContext context;
  absl::Mutex mu;
  std::map<std::string, std::shared_ptr<data::Iterator>> by_id
      ABSL_GUARDED_BY(mu);
  // Held while an iterator is read: a data::Iterator is read by one thread
  // at a time.
  absl::Mutex read_mu;
};

}  // namespace

namespace ps_internal {

absl::StatusOr<devices::Tensor> NewPerWorkerHandle(absl::string_view name,
                                                   absl::string_view what) {
  if (name.empty() || absl::StrContains(name, '\n')) {
    return absl::InvalidArgumentError(what);
  }
  static const int64_t epoch = absl::ToUnixNanos(absl::Now());
  static std::atomic<int64_t> next{0};
  return NameTensor(absl::StrCat(name, "\n", epoch, ".", next.fetch_add(1)));
}

absl::StatusOr<InputContext> WorkerInputContext(const Server& server) {
  int64_t workers = 1;
  if (server.cluster_spec().has_job("worker")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> tasks,
                     server.cluster_spec().task_indices("worker"));
    workers = std::max<int64_t>(1, static_cast<int64_t>(tasks.size()));
  }
  const int64_t index = server.job_name() == "worker" ? server.task_index() : 0;
  return InputContext::Create(workers, std::min(index, workers - 1), workers);
}

absl::StatusOr<std::vector<devices::Tensor>> RunPerWorkerFunction(
    Server& server, const devices::Tensor& handle, absl::string_view prefix,
    absl::string_view handle_kind, absl::string_view resource_kind,
    absl::string_view register_with) {
  absl::StatusOr<std::string> text = TensorName(handle);
  std::vector<std::string> parts;
  if (text.ok()) parts = absl::StrSplit(*text, '\n');
  if (!text.ok() || parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the tensor is not ", handle_kind));
  }
  const std::string function = absl::StrCat(prefix, parts[0]);
  const std::vector<std::string> names = server.function_registry().names();
  if (std::find(names.begin(), names.end(), function) == names.end()) {
    return absl::NotFoundError(absl::StrCat(
        "this worker (", server.job_name(), " task ", server.task_index(),
        ") has no ", resource_kind, " \"", parts[0], "\": register it with ",
        register_with, " on every worker"));
  }
  return server.function_registry().Run(function, {NameTensor(parts[1])});
}

}  // namespace ps_internal

absl::Status RegisterWorkerDataset(Server& server, absl::string_view name,
                                   WorkerDatasetFn fn) {
  if (name.empty() || absl::StrContains(name, '\n') || !fn) {
    return absl::InvalidArgumentError(
        "RegisterWorkerDataset needs a name (without newlines) and a dataset "
        "function");
  }
  ASSIGN_OR_RETURN(InputContext context,
                   ps_internal::WorkerInputContext(server));
  auto state = std::make_shared<WorkerIterators>();
  state->fn = std::move(fn);
  state->context = context;
  const std::string dataset(name);
  return server.function_registry().Register(
      absl::StrCat(kFunctionPrefix, name),
      [state, dataset](std::vector<devices::Tensor> args)
          -> absl::StatusOr<std::vector<devices::Tensor>> {
        if (args.size() != 1) {
          return absl::InvalidArgumentError("expected an iterator id");
        }
        ASSIGN_OR_RETURN(std::string id, TensorName(args[0]));
        std::shared_ptr<data::Iterator> it;
        {
          absl::MutexLock lock(&state->mu);
          auto found = state->by_id.find(id);
          if (found != state->by_id.end()) it = found->second;
        }
        absl::MutexLock read(&state->read_mu);
        if (it == nullptr) {
          ASSIGN_OR_RETURN(data::Dataset ds, state->fn(state->context));
          it = std::shared_ptr<data::Iterator>(ds.MakeIterator());
          absl::MutexLock lock(&state->mu);
          auto [slot, inserted] = state->by_id.emplace(id, it);
          if (!inserted) it = slot->second;
        }
        ASSIGN_OR_RETURN(std::optional<data::Element> next, it->GetNext());
        std::vector<devices::Tensor> out = {
            devices::Tensor::FromVector<uint8_t>(
                {static_cast<uint8_t>(next.has_value() ? 1 : 0)})};
        if (next.has_value()) {
          for (devices::Tensor& t : *next) out.push_back(std::move(t));
        }
        return out;
      });
}

absl::StatusOr<PerWorkerIterator> PerWorkerIterator::Create(
    absl::string_view dataset) {
  ASSIGN_OR_RETURN(
      devices::Tensor handle,
      ps_internal::NewPerWorkerHandle(
          dataset,
          "a per-worker iterator needs the name of a worker dataset (without "
          "newlines)"));
  return PerWorkerIterator(std::string(dataset), std::move(handle));
}

absl::StatusOr<std::optional<data::Element>> NextElement(
    Server& server, const devices::Tensor& handle) {
  ASSIGN_OR_RETURN(
      std::vector<devices::Tensor> got,
      ps_internal::RunPerWorkerFunction(
          server, handle, kFunctionPrefix,
          "a per-worker iterator handle (PerWorkerIterator::handle)", "dataset",
          "RegisterWorkerDataset"));
  if (got.empty() || got[0].num_elements() != 1) {
    return absl::InternalError("a worker dataset answered malformed");
  }
  if (got[0].data<uint8_t>()[0] == 0) return std::nullopt;
  return data::Element(got.begin() + 1, got.end());
}

}  // namespace ps
}  // namespace distribute
