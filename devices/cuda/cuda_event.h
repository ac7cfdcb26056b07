// CudaEvent: the completion of work enqueued on a CudaDevice. The work runs
// in two stages: its host function launches kernels on the device's stream
// (the "launched" stage, done on the device's queue thread), then the GPU
// runs them. The event records a cudaEvent on the stream after the launches
// and is done when cudaEventQuery says the GPU has passed it.
//
// Example:
//   std::shared_ptr<devices::cuda::CudaEvent> done =
//       gpu->EnqueueCuda(cost, [&] { return LaunchMyKernels(gpu->stream()); });
//   absl::Status s = done->Wait(absl::Seconds(10));  // polls cudaEventQuery
#ifndef DEVICES_CUDA_CUDA_EVENT_H_
#define DEVICES_CUDA_CUDA_EVENT_H_

#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/completion.h"
#include "devices/event.h"

namespace devices {
namespace cuda {

// How long a thread polling for GPU work spins before it sleeps: long
// enough for a small kernel or collective (a sleep costs 50 us or more on
// Linux, the timer slack, against microseconds of GPU work).
inline constexpr absl::Duration kGpuPollSpin = absl::Microseconds(200);

// Paces a loop that polls the GPU or NCCL: Pause() spins (a CPU pause, or a
// yield where the process is bound to one CPU) until `spin` has passed
// since construction, then sleeps, 20 us at first, doubling up to 1 ms.
class PollBackoff {
 public:
  explicit PollBackoff(absl::Duration spin = kGpuPollSpin);
  void Pause();

 private:
  const absl::Time spin_until_;
  absl::Duration sleep_ = absl::Microseconds(20);
};

class CudaEvent : public Event {
 public:
  // `what` names the work for messages, e.g. "Add on .../device:GPU:0".
  explicit CudaEvent(std::string what);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  // Waits, polling cudaEventQuery with a growing back-off, until the GPU has
  // done the work or `timeout` has passed. Returns the host function's error
  // if it failed, INTERNAL (or UNAVAILABLE) with CUDA's message if the GPU
  // reported an error, DEADLINE_EXCEEDED naming the work past the timeout
  // (the work goes on; Wait may be called again). Thread-safe.
  absl::Status Wait(absl::Duration timeout) override;
  bool IsReady() const override { return Poll().has_value(); }

  // The final status once the work is done; nullopt while it is not. Never
  // blocks. Thread-safe.
  std::optional<absl::Status> Poll() const;

  // Blocks until the host function has run (its kernels are launched) or
  // `deadline` passes; returns whether it has run.
  bool WaitLaunched(absl::Time deadline) const;

  // For the device's queue: the host function returned `status` and
  // `recorded` (owned from now on; nullptr if none could be recorded) marks
  // the end of its launches on the stream. Called once.
  void MarkLaunched(absl::Status status, cudaEvent_t recorded);

 private:
  const std::string what_;
  // Written once by MarkLaunched before launched_ completes.
  cudaEvent_t recorded_ = nullptr;
  mutable Completion launched_;
  mutable absl::Mutex mu_;
  mutable std::optional<absl::Status> final_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_CUDA_EVENT_H_
