#include "distribute/context.h"

#include "distribute/strategy.h"

namespace distribute {
namespace internal {

ThreadMode& CurrentMode() {
  thread_local ThreadMode mode;
  return mode;
}

ModeSwitch::ModeSwitch(ThreadMode mode) : saved_(CurrentMode()) {
  CurrentMode() = mode;
}

ModeSwitch::~ModeSwitch() { CurrentMode() = saved_; }

absl::StatusOr<ScopeGuard> EnterScope(Strategy* strategy) {
  ThreadMode& mode = CurrentMode();
  if (strategy == &DefaultStrategy()) {
    // As TF's default distribution context: the thread stays in the default
    // replica context (another strategy's scope may be entered inside), and
    // it must not be entered within another strategy's scope.
    if (mode.strategy != nullptr) {
      return absl::FailedPreconditionError(
          "Must not nest tf.distribute.Strategy scopes: the default "
          "strategy's scope was entered inside " +
          mode.strategy->name() + "'s; leave that scope first.");
    }
    return ScopeGuard(/*pushed=*/false, /*active=*/false);
  }
  if (mode.strategy == nullptr) {
    mode.strategy = strategy;
    mode.replica = nullptr;
    mode.same_scope_count = 0;
    return ScopeGuard(/*pushed=*/true);
  }
  if (mode.strategy != strategy) {
    return absl::FailedPreconditionError(
        "Mixing different tf.distribute.Strategy objects: " +
        mode.strategy->name() + " is not " + strategy->name() +
        ". Leave the other strategy's scope first.");
  }
  if (mode.replica != nullptr) {
    return absl::FailedPreconditionError(
        "Method requires being in cross-replica context, use "
        "get_replica_context().merge_call()");
  }
  ++mode.same_scope_count;
  return ScopeGuard(/*pushed=*/false);
}

}  // namespace internal

ScopeGuard::ScopeGuard(ScopeGuard&& other) noexcept
    : pushed_(other.pushed_), active_(other.active_) {
  other.active_ = false;
}

ScopeGuard::~ScopeGuard() {
  if (!active_) return;
  internal::ThreadMode& mode = internal::CurrentMode();
  if (pushed_) {
    mode = internal::ThreadMode();
  } else if (mode.same_scope_count > 0) {
    --mode.same_scope_count;
  }
}

Strategy& GetStrategy() {
  Strategy* s = internal::CurrentMode().strategy;
  return s != nullptr ? *s : DefaultStrategy();
}

bool HasStrategy() { return internal::CurrentMode().strategy != nullptr; }

bool InCrossReplicaContext() {
  const internal::ThreadMode& mode = internal::CurrentMode();
  return mode.strategy != nullptr && mode.replica == nullptr;
}

ReplicaContext* GetReplicaContext() {
  const internal::ThreadMode& mode = internal::CurrentMode();
  if (mode.strategy == nullptr) return DefaultReplicaContext();
  return mode.replica;
}

absl::Status ExperimentalSetStrategy(Strategy* strategy) {
  internal::ThreadMode& mode = internal::CurrentMode();
  if (mode.strategy != nullptr && !mode.set_by_experimental) {
    return absl::FailedPreconditionError(
        "Must not be called inside a `tf.distribute.Strategy` scope.");
  }
  if (mode.replica != nullptr) {
    return absl::FailedPreconditionError(
        "Must not be called inside a replica context.");
  }
  mode = internal::ThreadMode();
  if (strategy != nullptr) {
    mode.strategy = strategy;
    mode.set_by_experimental = true;
  }
  return absl::OkStatus();
}

ReduceOp GetLossReduction() { return ReduceOp::kSum; }

}  // namespace distribute
