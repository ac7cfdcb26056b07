#include "devices/cuda/cuda_event.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/completion.h"
#include "devices/cuda/cuda_status.h"

namespace devices {
namespace cuda {

PollBackoff::PollBackoff(absl::Duration spin)
    : spin_until_(absl::Now() + spin) {}

void PollBackoff::Pause() {
  if (absl::Now() < spin_until_) {
    if (BoundToOneCpu()) {
      std::this_thread::yield();
    } else {
      CpuRelax();
    }
    return;
  }
  absl::SleepFor(sleep_);
  sleep_ = std::min(sleep_ * 2, absl::Milliseconds(1));
}

CudaEvent::CudaEvent(std::string what) : what_(std::move(what)) {}

CudaEvent::~CudaEvent() {
  // Safe while the GPU has not reached the event: CUDA then releases it
  // when it completes.
  if (launched_.done() && recorded_ != nullptr) cudaEventDestroy(recorded_);
}

void CudaEvent::MarkLaunched(absl::Status status, cudaEvent_t recorded) {
  recorded_ = recorded;
  launched_.Complete(std::move(status));
}

bool CudaEvent::WaitLaunched(absl::Time deadline) const {
  return launched_.WaitFor(
      std::max(deadline - absl::Now(), absl::ZeroDuration()));
}

std::optional<absl::Status> CudaEvent::Poll() const {
  if (!launched_.done()) return std::nullopt;
  {
    absl::MutexLock lock(&mu_);
    if (final_.has_value()) return final_;
  }
  absl::Status status = launched_.status();
  if (recorded_ != nullptr) {
    const cudaError_t query = cudaEventQuery(recorded_);
    if (query == cudaErrorNotReady) return std::nullopt;
    if (query != cudaSuccess && status.ok()) {
      status = CudaStatus(
          query, absl::StrCat("the GPU running ", what_, " (cudaEventQuery)"));
    }
  }
  absl::MutexLock lock(&mu_);
  if (!final_.has_value()) final_ = std::move(status);
  return final_;
}

absl::Status CudaEvent::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto deadline_exceeded = [&](absl::string_view stage) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "%s did not %s within %gs; the GPU may be stuck behind earlier work "
        "(or waiting for a peer in a collective) or the timeout may be too "
        "short",
        what_, stage, absl::ToDoubleSeconds(timeout)));
  };
  if (!WaitLaunched(deadline)) return deadline_exceeded("start");
  PollBackoff backoff;
  while (true) {
    std::optional<absl::Status> status = Poll();
    if (status.has_value()) return *std::move(status);
    if (absl::Now() >= deadline) return deadline_exceeded("finish");
    backoff.Pause();
  }
}

}  // namespace cuda
}  // namespace devices
