#include "distribute/in_process_cluster.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/device.h"
#include "devices/status_macros.h"
#include "devices/transport.h"
#include "distribute/strategy_devices.h"
#include "distribute/thread_group.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<InProcessCluster>> InProcessCluster::Create(
    devices::Platform& platform, CommunicationOptions options) {
  ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> workers,
      MultiWorkerMirroredStrategy::CreateInProcessWorkers(platform, options));
  auto cluster = std::unique_ptr<InProcessCluster>(new InProcessCluster());
  for (const auto& strategy : workers) {
    // The task's first CPU (its host), else its first replica device.
    const std::string& first = strategy->extended().WorkerDevices()[0];
    ASSIGN_OR_RETURN(
        devices::Device * host,
        platform.FindDevice(LocalCpu(platform, first).value_or(first)));
    cluster->host_devices_.push_back(host);
  }
  cluster->workers_ = std::move(workers);
  return cluster;
}

absl::Status InProcessCluster::Run(const WorkerFn& fn) {
  const int n = num_workers();
  std::vector<absl::Status> results(static_cast<size_t>(n));
  // "worker task 1 (/job:worker/replica:0/task:1)".
  auto label = [this](int w) {
    return absl::StrCat("worker task ", w, " (/job:", worker(w).task_type(),
                        "/replica:0/task:", worker(w).task_id(), ")");
  };
  internal::RunBoundThreads(host_devices_, [&](int w) {
    absl::Status s = fn(worker(w));
    if (!s.ok() && worker(w).abort_group_) {
      // Like a real worker that gives up: the others' collectives end with
      // UNAVAILABLE (DEADLINE_EXCEEDED after a timeout) naming this task
      // instead of waiting for it.
      worker(w)
          .abort_group_(
              absl::Status(devices::GroupAbortCode(s.code()),
                           absl::StrCat(label(w), " failed: ", s.ToString())))
          .IgnoreError();
    }
    results[static_cast<size_t>(w)] = std::move(s);
  });
  int first = -1;
  std::string others;
  std::string returned_ok;
  for (int w = 0; w < n; ++w) {
    const absl::Status& s = results[static_cast<size_t>(w)];
    if (s.ok()) {
      absl::StrAppend(&returned_ok, returned_ok.empty() ? "" : ", ", label(w));
      continue;
    }
    if (first < 0) {
      first = w;
      continue;
    }
    absl::StrAppend(&others, "; worker task ", w, ": ", s.ToString());
  }
  if (first < 0) return absl::OkStatus();
  const absl::Status& s = results[static_cast<size_t>(first)];
  // A worker that returned while the others still ran collectives with it
  // leaves them waiting for it (on the simulator, a deadlock): say so.
  if (!returned_ok.empty()) {
    absl::StrAppend(&others, "; ", returned_ok,
                    " returned OK: every worker must run the same "
                    "collectives");
  }
  return absl::Status(s.code(),
                      absl::StrCat(label(first), ": ", s.message(), others));
}

}  // namespace distribute
