// The per-thread distribution context of tf.distribute: which strategy is
// current, and whether the thread is in a replica context (inside
// Strategy::Run's function) or in the cross-replica context (inside a
// strategy's scope, outside Run).
//
//   Strategy& s = GetStrategy();          // the default strategy outside
//   scopes
//   {
//     absl::StatusOr<ScopeGuard> scope = mirrored->Scope();
//     InCrossReplicaContext();            // true
//     GetReplicaContext();                // nullptr
//   }
//   // inside Run's fn: GetReplicaContext() is that replica's context.
//
// Rules, as TF's (distribute_lib.py):
//  * Outside every scope the default strategy is current and the thread is
//    in the default replica context (InCrossReplicaContext() is false).
//  * Entering the scope of the strategy already current is allowed (nested);
//    entering another strategy's scope is FAILED_PRECONDITION ("Mixing
//    different tf.distribute.Strategy objects"); entering a scope from a
//    replica context is FAILED_PRECONDITION ("Method requires being in
//    cross-replica context, use get_replica_context().merge_call()").
#ifndef DISTRIBUTE_CONTEXT_H_
#define DISTRIBUTE_CONTEXT_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distribute/reduce_op.h"

namespace distribute {

class Strategy;
class ReplicaContext;

// The current strategy, or the default strategy.
Strategy& GetStrategy();
// Whether a non-default strategy is current.
bool HasStrategy();
// True inside a strategy's scope and outside its Run.
bool InCrossReplicaContext();
// The replica context of this thread: a replica's inside Run, the default
// strategy's outside scopes, nullptr in the cross-replica context.
ReplicaContext* GetReplicaContext();
// Enters `strategy`'s scope for this thread without a guard, or leaves it
// with nullptr (tf.distribute.experimental_set_strategy).
// FAILED_PRECONDITION when called inside a scope entered with Scope().
absl::Status ExperimentalSetStrategy(Strategy* strategy);
// The default strategy's replica context (what GetReplicaContext() returns
// outside every scope).
ReplicaContext* DefaultReplicaContext();

// The loss reduction strategies expect: SUM (losses are scaled by the global
// batch size, see ComputeAverageLoss), as TF outside Estimator.
ReduceOp GetLossReduction();

// Leaves the scope it entered when destroyed. Movable, not copyable.
class ScopeGuard;
namespace internal {
absl::StatusOr<ScopeGuard> EnterScope(Strategy* strategy);
}  // namespace internal

class ScopeGuard {
 public:
  ScopeGuard(ScopeGuard&& other) noexcept;
  ScopeGuard& operator=(ScopeGuard&&) = delete;
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ~ScopeGuard();

 private:
  friend absl::StatusOr<ScopeGuard> internal::EnterScope(Strategy* strategy);
  explicit ScopeGuard(bool pushed, bool active = true)
      : pushed_(pushed), active_(active) {}
  bool pushed_;  // false: re-entered the current strategy's scope
  bool active_;  // false: the default strategy's scope, which changes nothing
};

namespace internal {

// The thread's mode. strategy == nullptr: the default strategy.
struct ThreadMode {
  Strategy* strategy = nullptr;
  ReplicaContext* replica = nullptr;  // nullptr with strategy: cross-replica
  int same_scope_count = 0;
  bool set_by_experimental = false;
};

ThreadMode& CurrentMode();

// Switches the calling thread into a mode for its lifetime (replica threads
// of Run, the merge function of MergeCall).
class ModeSwitch {
 public:
  explicit ModeSwitch(ThreadMode mode);
  ModeSwitch(const ModeSwitch&) = delete;
  ModeSwitch& operator=(const ModeSwitch&) = delete;
  ~ModeSwitch();

 private:
  ThreadMode saved_;
};

absl::StatusOr<ScopeGuard> EnterScope(Strategy* strategy);

}  // namespace internal
}  // namespace distribute

#endif  // DISTRIBUTE_CONTEXT_H_
