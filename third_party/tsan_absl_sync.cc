// Makes the system Abseil's synchronization visible to ThreadSanitizer.
//
// Debian's libabsl_synchronization.so is not built with -fsanitize=thread,
// so ThreadSanitizer cannot see that absl::Mutex, absl::CondVar and
// absl::Notification order memory: every access guarded by them would be
// reported as a race (and so would the drops of an absl::Status' shared
// message, counted inside libabsl_status.so). Under --config=tsan this library
// (linked into every binary through //third_party:absl) defines those functions
// itself: each tells ThreadSanitizer what the call does to the mutex (the
// __tsan_mutex_* annotations an instrumented Abseil makes) and calls the
// library's own function, found with dlsym(RTLD_NEXT). The binary is linked
// with -rdynamic, so the system gRPC's and Abseil's own calls (made through
// the PLT) reach these definitions too.
//
// Only this file's functions are replaced; the locking itself is always
// Abseil's.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/base/config.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define TSAN_ABSL_STR2(x) #x
#define TSAN_ABSL_STR(x) TSAN_ABSL_STR2(x)

// The Itanium mangling of the member absl::<inline namespace>::<rest>;
// `rest` is the mangled class and member, e.g. "5Mutex4LockEv", and a
// leading 'K' marks a const member ("K12Notification...").
std::string Mangle(const char* rest) {
  std::string name = "_ZN";
  if (*rest == 'K') {
    name += 'K';
    ++rest;
  }
  name += "4absl";
#if ABSL_OPTION_USE_INLINE_NAMESPACE
  const char* ns = TSAN_ABSL_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  name += std::to_string(std::strlen(ns));
  name += ns;
#endif
  name += rest;
  return name;
}

// The system library's definition of the function mangled as `rest`.
template <typename Fn>
Fn Real(const char* rest) {
  const std::string name = Mangle(rest);
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found in the system Abseil\n",
                 name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

#define REAL(rest, type)                     \
  static const auto real = Real<type>(rest); \
  const Scope scope

void* Addr(const absl::Mutex* mu) { return const_cast<absl::Mutex*>(mu); }

// How many of the functions below the thread is in. Some of Abseil's call
// others through the PLT (CondVar::WaitWithTimeout calls WaitWithDeadline,
// which comes here again); only the outermost call annotates.
thread_local int depth = 0;

// Marks the calls of one function; `outer` is whether it annotates.
class Scope {
 public:
  Scope() : outer_(depth++ == 0) {}
  ~Scope() { --depth; }
  bool outer() const { return outer_; }

 private:
  const bool outer_;
};

void PreLock(const Scope& scope, const absl::Mutex* mu, unsigned flags) {
  if (scope.outer()) __tsan_mutex_pre_lock(Addr(mu), flags);
}
void PostLock(const Scope& scope, const absl::Mutex* mu, unsigned flags) {
  if (scope.outer()) __tsan_mutex_post_lock(Addr(mu), flags, 0);
}
void PreUnlock(const Scope& scope, const absl::Mutex* mu, unsigned flags) {
  if (scope.outer()) __tsan_mutex_pre_unlock(Addr(mu), flags);
}
void PostUnlock(const Scope& scope, const absl::Mutex* mu, unsigned flags) {
  if (scope.outer()) __tsan_mutex_post_unlock(Addr(mu), flags);
}

// Where absl::Notification keeps its flag, which the inline
// HasBeenNotified() reads with an instrumented acquire load.
struct NotificationLayout {
  absl::Mutex mutex;
  std::atomic<bool> notified;
};
static_assert(sizeof(NotificationLayout) == sizeof(absl::Notification),
              "absl::Notification's layout changed");

constexpr unsigned kRead = __tsan_mutex_read_lock;

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  REAL("5Mutex4LockEv", void (*)(Mutex*));
  PreLock(scope, this, 0);
  real(this);
  PostLock(scope, this, 0);
}

void Mutex::ReaderLock() {
  REAL("5Mutex10ReaderLockEv", void (*)(Mutex*));
  PreLock(scope, this, kRead);
  real(this);
  PostLock(scope, this, kRead);
}

void Mutex::Unlock() {
  REAL("5Mutex6UnlockEv", void (*)(Mutex*));
  PreUnlock(scope, this, 0);
  real(this);
  PostUnlock(scope, this, 0);
}

void Mutex::ReaderUnlock() {
  REAL("5Mutex12ReaderUnlockEv", void (*)(Mutex*));
  PreUnlock(scope, this, kRead);
  real(this);
  PostUnlock(scope, this, kRead);
}

bool Mutex::TryLock() {
  REAL("5Mutex7TryLockEv", bool (*)(Mutex*));
  PreLock(scope, this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  PostLock(scope, this,
           locked ? __tsan_mutex_try_lock : __tsan_mutex_try_lock_failed);
  return locked;
}

bool Mutex::ReaderTryLock() {
  REAL("5Mutex13ReaderTryLockEv", bool (*)(Mutex*));
  PreLock(scope, this, __tsan_mutex_try_read_lock);
  const bool locked = real(this);
  PostLock(
      scope, this,
      locked ? __tsan_mutex_try_read_lock : __tsan_mutex_try_read_lock_failed);
  return locked;
}

void Mutex::LockWhen(const Condition& cond) {
  REAL("5Mutex8LockWhenERKNS0_9ConditionE", void (*)(Mutex*, const Condition&));
  PreLock(scope, this, 0);
  real(this, cond);
  PostLock(scope, this, 0);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  REAL("5Mutex14ReaderLockWhenERKNS0_9ConditionE",
       void (*)(Mutex*, const Condition&));
  PreLock(scope, this, kRead);
  real(this, cond);
  PostLock(scope, this, kRead);
}

// The *WithTimeout/*WithDeadline forms hold the mutex on return whether
// or not the condition became true.
bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  REAL("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE",
       bool (*)(Mutex*, const Condition&, absl::Duration));
  PreLock(scope, this, 0);
  const bool met = real(this, cond, timeout);
  PostLock(scope, this, 0);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  REAL("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE",
       bool (*)(Mutex*, const Condition&, absl::Time));
  PreLock(scope, this, 0);
  const bool met = real(this, cond, deadline);
  PostLock(scope, this, 0);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond,
                                      absl::Duration timeout) {
  REAL("5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE",
       bool (*)(Mutex*, const Condition&, absl::Duration));
  PreLock(scope, this, kRead);
  const bool met = real(this, cond, timeout);
  PostLock(scope, this, kRead);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond,
                                       absl::Time deadline) {
  REAL("5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE",
       bool (*)(Mutex*, const Condition&, absl::Time));
  PreLock(scope, this, kRead);
  const bool met = real(this, cond, deadline);
  PostLock(scope, this, kRead);
  return met;
}

// Await releases the mutex while it waits and holds it again on return:
// other threads' critical sections in between happen before the caller's
// next accesses. (A reader lock is not told apart here; the project awaits
// under writer locks.)
void Mutex::Await(const Condition& cond) {
  REAL("5Mutex5AwaitERKNS0_9ConditionE", void (*)(Mutex*, const Condition&));
  PreUnlock(scope, this, 0);
  PostUnlock(scope, this, 0);
  PreLock(scope, this, 0);
  real(this, cond);
  PostLock(scope, this, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  REAL("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE",
       bool (*)(Mutex*, const Condition&, absl::Duration));
  PreUnlock(scope, this, 0);
  PostUnlock(scope, this, 0);
  PreLock(scope, this, 0);
  const bool met = real(this, cond, timeout);
  PostLock(scope, this, 0);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  REAL("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE",
       bool (*)(Mutex*, const Condition&, absl::Time));
  PreUnlock(scope, this, 0);
  PostUnlock(scope, this, 0);
  PreLock(scope, this, 0);
  const bool met = real(this, cond, deadline);
  PostLock(scope, this, 0);
  return met;
}

Mutex::~Mutex() {
  REAL("5MutexD2Ev", void (*)(Mutex*));
  if (scope.outer()) __tsan_mutex_destroy(this, __tsan_mutex_not_static);
  real(this);
}

void CondVar::Wait(Mutex* mu) {
  REAL("7CondVar4WaitEPNS0_5MutexE", void (*)(CondVar*, Mutex*));
  PreUnlock(scope, mu, 0);
  PostUnlock(scope, mu, 0);
  PreLock(scope, mu, 0);
  real(this, mu);
  PostLock(scope, mu, 0);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  REAL("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE",
       bool (*)(CondVar*, Mutex*, absl::Duration));
  PreUnlock(scope, mu, 0);
  PostUnlock(scope, mu, 0);
  PreLock(scope, mu, 0);
  const bool timed_out = real(this, mu, timeout);
  PostLock(scope, mu, 0);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  REAL("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE",
       bool (*)(CondVar*, Mutex*, absl::Time));
  PreUnlock(scope, mu, 0);
  PostUnlock(scope, mu, 0);
  PreLock(scope, mu, 0);
  const bool timed_out = real(this, mu, deadline);
  PostLock(scope, mu, 0);
  return timed_out;
}

// Notify sets the flag under the notification's mutex (whose Lock and
// Unlock come through the definitions above); the inline HasBeenNotified
// reads it without the mutex, with an instrumented acquire load, which
// synchronizes with this release on the flag's address.
void Notification::Notify() {
  REAL("12Notification6NotifyEv", void (*)(Notification*));
  if (scope.outer())
    __tsan_release(&reinterpret_cast<NotificationLayout*>(this)->notified);
  real(this);
}

// The waits read the flag inside the library when it is already set, so
// ThreadSanitizer sees no acquire there: each that returns notified
// acquires the flag's address itself, pairing with Notify's release.
void Notification::WaitForNotification() const {
  REAL("K12Notification19WaitForNotificationEv", void (*)(const Notification*));
  real(this);
  if (scope.outer()) {
    __tsan_acquire(
        &reinterpret_cast<NotificationLayout*>(const_cast<Notification*>(this))
             ->notified);
  }
}

bool Notification::WaitForNotificationWithTimeout(
    absl::Duration timeout) const {
  REAL("K12Notification30WaitForNotificationWithTimeoutENS0_8DurationE",
       bool (*)(const Notification*, absl::Duration));
  const bool notified = real(this, timeout);
  if (notified && scope.outer()) {
    __tsan_acquire(
        &reinterpret_cast<NotificationLayout*>(const_cast<Notification*>(this))
             ->notified);
  }
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  REAL("K12Notification31WaitForNotificationWithDeadlineENS0_4TimeE",
       bool (*)(const Notification*, absl::Time));
  const bool notified = real(this, deadline);
  if (notified && scope.outer()) {
    __tsan_acquire(
        &reinterpret_cast<NotificationLayout*>(const_cast<Notification*>(this))
             ->notified);
  }
  return notified;
}

// absl::Status keeps a message and payloads in a reference-counted rep
// that the last Unref deletes. The inline Unref calls this function of the
// library, whose decrement (acq_rel) ThreadSanitizer cannot see: a thread
// that read a status' message and then dropped its copy is not ordered
// before another thread's deleting drop of the same rep. Every drop
// releases and acquires on the rep, as that decrement does.
void Status::UnrefNonInlined(uintptr_t rep) {
  REAL("6Status15UnrefNonInlinedEm", void (*)(uintptr_t));
  (void)scope;
  void* const count = reinterpret_cast<void*>(rep & ~uintptr_t{1});
  __tsan_release(count);
  __tsan_acquire(count);
  real(rep);
}

ABSL_NAMESPACE_END
}  // namespace absl

// The system gRPC and Abseil synchronize inside themselves with atomics
// that ThreadSanitizer cannot see (they are not instrumented), so what their
// own threads do to their own memory (freed buffers, sendmsg) looks racy.
// These ignore the accesses ThreadSanitizer's interceptors record for calls
// made from those libraries, and races inside four functions of gRPC's
// headers; every access of the project's own code is still checked.
extern "C" __attribute__((visibility("default"), used)) const char*
__tsan_default_suppressions() {
  return "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libabsl_status.so\n"
         "called_from_lib:libabsl_synchronization.so\n"
         "called_from_lib:libabsl_cord.so\n"
         "called_from_lib:libabsl_cord_internal.so\n"
         "called_from_lib:libabsl_random_internal_pool_urbg.so\n"
         "called_from_lib:libssl.so\n"
         "called_from_lib:libcrypto.so\n"
         // gRPC's inline header code that copies a call's status message
         // out of the slice a gRPC thread built it in (through
         // libstdc++), handed over by gRPC's completion queue; it calls
         // no code of the project's.
         "race:grpc::internal::CallOpClientRecvStatus::FinishOp\n"
         // gRPC's callback API: a call object that the caller's thread
         // built (inline header code) and a gRPC thread finishes, ordered
         // by gRPC's completion queue. Only where gRPC's own function is
         // the access itself (race_top): the callbacks and deserializers
         // these run, the project's code, are still checked.
         "race_top:grpc::internal::CallbackWithStatusTag::Run\n"
         "race_top:grpc::internal::CallOpSet<*>::FinalizeResult\n"
         "race_top:grpc::internal::CallOpSendInitialMetadata::FinishOp\n";
}
