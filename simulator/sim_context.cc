// Shared state of the simulated platform and the calling thread's actor;
// see sim_context.h.
#include "simulator/sim_context.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace simulator {

SimContext::SimContext(std::unique_ptr<Topology> topology,
                       std::unique_ptr<Simulation> simulation,
                       std::vector<std::string> names, bool functional,
                       absl::Duration wall_timeout, std::string platform_name)
    : topology_(std::move(topology)),
      router_(std::make_unique<Router>(*topology_)),
      simulation_(std::move(simulation)),
      names_(std::move(names)),
      functional_(functional),
      wall_timeout_(wall_timeout),
      platform_name_(std::move(platform_name)),
      host_cpu_(static_cast<size_t>(topology_->num_hosts()), -1) {
  for (size_t i = 0; i < names_.size(); ++i) {
    index_.emplace(names_[i], static_cast<int>(i));
  }
  for (const DeviceInfo& device : topology_->devices()) {
    if (device.kind != DeviceDef::CPU) continue;
    int& cpu = host_cpu_[static_cast<size_t>(device.host)];
    if (cpu < 0) cpu = device.index;
  }
}

int SimContext::FindDevice(absl::string_view full_name) const {
  auto it = index_.find(full_name);
  return it == index_.end() ? -1 : it->second;
}

int SimContext::HostCpu(int device) const {
  return host_cpu_[static_cast<size_t>(topology_->device(device).host)];
}

absl::StatusOr<std::vector<int>> SimContext::Route(int src_device,
                                                   int dst_device) const {
  return router_->Route(topology_->device(src_device).node,
                        topology_->device(dst_device).node);
}

std::unique_ptr<SimThreadBinding> SimThreadBinding::Bind(
    std::shared_ptr<SimContext> context, ActorId actor, std::string label) {
  // The binding that is current before this one is created.
  auto* outer =
      dynamic_cast<SimThreadBinding*>(devices::ThreadBinding::Current());
  if (outer != nullptr && (&outer->context_->runtime() != &context->runtime() ||
                           !outer->registered_)) {
    outer = nullptr;
  }
  ActorRuntime& runtime = context->runtime();
  std::unique_ptr<SimThreadBinding> binding(
      new SimThreadBinding(std::move(context), actor, outer));
  binding->registered_ = runtime.Register(actor, std::move(label)).ok();
  // Register the new actor before the old one leaves, so that the count of
  // running actors never touches zero in between. The old one waits for
  // the new one (its own thread) and can unblock nothing meanwhile.
  if (binding->registered_ && outer != nullptr) {
    runtime.SuspendForActors(outer->actor_);
  }
  return binding;
}

SimThreadBinding::SimThreadBinding(std::shared_ptr<SimContext> context,
                                   ActorId actor, SimThreadBinding* outer)
    : context_(std::move(context)), actor_(actor), outer_(outer) {}

SimThreadBinding::~SimThreadBinding() {
  if (!registered_) return;
  ActorRuntime& runtime = context_->runtime();
  if (outer_ != nullptr) runtime.Resume(outer_->actor_);
  runtime.Unregister(actor_).IgnoreError();
}

void SimThreadBinding::Suspend() {
  if (registered_) context_->runtime().Suspend(actor_);
}

void SimThreadBinding::SuspendForBoundThreads() {
  if (registered_) context_->runtime().SuspendForActors(actor_);
}

void SimThreadBinding::Resume() {
  if (registered_) context_->runtime().Resume(actor_);
}

SimActor::SimActor(SimContext& context, absl::string_view what)
    : runtime_(context.runtime()) {
  auto* binding =
      dynamic_cast<SimThreadBinding*>(devices::ThreadBinding::Current());
  if (binding != nullptr && binding->registered() &&
      &binding->context().runtime() == &runtime_) {
    id_ = binding->actor();
    return;
  }
  temporary_ = true;
  id_ = runtime_.RegisterTemporary(absl::StrCat("unbound thread (", what, ")"));
}

SimActor::~SimActor() {
  if (temporary_) runtime_.Unregister(id_).IgnoreError();
}

ParkOutcome SimActor::Park(std::string what, ActorRuntime::StartFunction start,
                           absl::Duration wall_timeout) {
  return runtime_.Park(id_, std::move(what), std::move(start), wall_timeout);
}

absl::Status SimActor::Submit(ActorRuntime::Work work) {
  return runtime_.Submit(id_, std::move(work));
}

absl::Status ParkStatus(const ParkOutcome& outcome, absl::string_view what) {
  if (outcome.reason == WakeReason::kCompleted) return outcome.status;
  return absl::Status(outcome.status.code(),
                      absl::StrCat(what, ": ", outcome.status.message()));
}

}  // namespace simulator
