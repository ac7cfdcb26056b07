// What the simulated platform's devices and transports share, and how the
// platform's operations reach the simulation from the calling thread.
//
// SimContext holds the topology with its router, the Simulation and the
// device directory; devices, transports and thread bindings keep it alive
// (transports may outlive their platform).
//
// A platform operation (a kernel, a copy, a send, a wait) runs as the
// calling thread's actor: SimActor finds the thread's SimThreadBinding for
// this simulation, or, for a thread that is not bound (a program's main
// thread between steps), registers a temporary actor for the length of the
// operation. SimThreadBinding is what SimDevice::BindThread returns: the
// thread is an actor from construction to destruction, and Suspend/Resume
// follow devices/thread_binding.h.
//
// Example (inside a SimDevice operation):
//   SimActor actor(*context_, "CopyToHost");
//   ParkOutcome done = actor.Park("CopyToHost on GPU:0",
//                                 [&](ActorWakeup wake) { ... },
//                                 context_->wall_timeout());
#ifndef SIMULATOR_SIM_CONTEXT_H_
#define SIMULATOR_SIM_CONTEXT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/thread_binding.h"
#include "simulator/actor_runtime.h"
#include "simulator/engine.h"
#include "simulator/routing.h"
#include "simulator/simulation.h"
#include "simulator/topology.h"

namespace simulator {

class SimContext {
 public:
  // `names[i]` is the full name of topology device i.
  SimContext(std::unique_ptr<Topology> topology,
             std::unique_ptr<Simulation> simulation,
             std::vector<std::string> names, bool functional,
             absl::Duration wall_timeout, std::string platform_name);
  SimContext(const SimContext&) = delete;
  SimContext& operator=(const SimContext&) = delete;

  const Topology& topology() const { return *topology_; }
  Simulation& simulation() const { return *simulation_; }
  ActorRuntime& runtime() const { return simulation_->runtime(); }
  bool functional() const { return functional_; }
  // The host-time limit of operations that take no timeout of their own.
  absl::Duration wall_timeout() const { return wall_timeout_; }
  const std::string& platform_name() const { return platform_name_; }

  int64_t num_devices() const { return static_cast<int64_t>(names_.size()); }
  const std::vector<std::string>& device_names() const { return names_; }
  const std::string& device_name(int device) const {
    return names_[static_cast<size_t>(device)];
  }
  // The index of the device with this full name, or -1.
  int FindDevice(absl::string_view full_name) const;
  // The CPU device on the host of `device` (-1 if the host has none).
  int HostCpu(int device) const;
  // The links from one device to another. Thread-safe.
  absl::StatusOr<std::vector<int>> Route(int src_device, int dst_device) const;

 private:
  const std::unique_ptr<Topology> topology_;
  const std::unique_ptr<Router> router_;
  const std::unique_ptr<Simulation> simulation_;
  const std::vector<std::string> names_;
  const bool functional_;
  const absl::Duration wall_timeout_;
  const std::string platform_name_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<int> host_cpu_;  // by host
};

// A thread bound to a simulated device: an actor of the simulation.
class SimThreadBinding : public devices::ThreadBinding {
 public:
  // Registers the calling thread as `actor`. If the thread was bound to
  // another actor of the same simulation, that one is suspended until this
  // binding ends.
  static std::unique_ptr<SimThreadBinding> Bind(
      std::shared_ptr<SimContext> context, ActorId actor, std::string label);
  // Unregisters the actor (and resumes the one it suspended).
  ~SimThreadBinding() override;

  void Suspend() override;
  void SuspendForBoundThreads() override;
  void Resume() override;

  ActorId actor() const { return actor_; }
  // False if the registration failed (an id collision): the thread then
  // acts as an unbound one.
  bool registered() const { return registered_; }
  const SimContext& context() const { return *context_; }

 private:
  SimThreadBinding(std::shared_ptr<SimContext> context, ActorId actor,
                   SimThreadBinding* outer);

  const std::shared_ptr<SimContext> context_;
  const ActorId actor_;
  SimThreadBinding* const outer_;
  bool registered_ = false;
};

// The calling thread's actor for one platform operation.
class SimActor {
 public:
  // The actor of the thread's binding if it is bound to this simulation;
  // otherwise a temporary actor, labelled `what`, registered until this
  // object is destroyed.
  SimActor(SimContext& context, absl::string_view what);
  ~SimActor();
  SimActor(const SimActor&) = delete;
  SimActor& operator=(const SimActor&) = delete;

  ActorId id() const { return id_; }
  ParkOutcome Park(std::string what, ActorRuntime::StartFunction start,
                   absl::Duration wall_timeout);
  absl::Status Submit(ActorRuntime::Work work);

 private:
  ActorRuntime& runtime_;
  ActorId id_ = 0;
  bool temporary_ = false;
};

// The status of a park, with `what` (the operation) added to the message
// when it did not complete: DEADLINE_EXCEEDED for a deadlock or a timeout.
absl::Status ParkStatus(const ParkOutcome& outcome, absl::string_view what);

}  // namespace simulator

#endif  // SIMULATOR_SIM_CONTEXT_H_
