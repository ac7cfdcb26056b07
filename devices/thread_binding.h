// Binding of a host thread to a device, and the marking of host-level waits.
//
// Strategies run each replica on its own host thread bound to the replica's
// device (Device::BindThread). What binding means is the platform's: on CUDA
// it makes the device current for the thread; in the simulator the thread
// becomes an actor whose simulated operations the engine orders
// deterministically. A bound thread that blocks on something the platform
// cannot see (a mutex, a condition variable, a join) must say so, or a
// simulator would wait for it forever:
//
//   std::unique_ptr<devices::ThreadBinding> binding = device->BindThread();
//   ...
//   {
//     devices::BlockingRegion outside;   // Suspend() ... Resume()
//     barrier.Wait();
//   }
//
// A thread that releases other bound threads from such a wait resumes them
// itself (ResumeFromOtherThread) before letting them go, so that they are
// accounted for before it can block again: that keeps simulations
// deterministic.
#ifndef DEVICES_THREAD_BINDING_H_
#define DEVICES_THREAD_BINDING_H_

namespace devices {

class ThreadBinding {
 public:
  ThreadBinding();
  // Restores the thread's previous binding.
  virtual ~ThreadBinding();
  ThreadBinding(const ThreadBinding&) = delete;
  ThreadBinding& operator=(const ThreadBinding&) = delete;

  // The bound thread is about to block outside the platform (own thread).
  virtual void Suspend() {}
  // The same, where what it waits for is other bound threads (it joins
  // them): it can release none of them meanwhile, so a platform that looks
  // for deadlocks among bound threads may still find one. Resume() ends it.
  virtual void SuspendForBoundThreads() { Suspend(); }
  // The thread is running again. Called by the thread itself when it wakes
  // on its own, or by another thread that wakes it (then before the wake).
  virtual void Resume() {}

  // The binding of the calling thread, or nullptr if it has none.
  static ThreadBinding* Current();

 private:
  ThreadBinding* previous_;
};

// Suspends the calling thread's binding (if any) for the region's lifetime.
// If another thread resumed it meanwhile (ThreadBinding::Resume called by the
// waker), the region must be told with MarkResumed() so it does not resume
// twice.
class BlockingRegion {
 public:
  BlockingRegion() : binding_(ThreadBinding::Current()) {
    if (binding_ != nullptr) binding_->Suspend();
  }
  ~BlockingRegion() {
    if (binding_ != nullptr && !resumed_) binding_->Resume();
  }
  BlockingRegion(const BlockingRegion&) = delete;
  BlockingRegion& operator=(const BlockingRegion&) = delete;

  void MarkResumed() { resumed_ = true; }

 private:
  ThreadBinding* binding_;
  bool resumed_ = false;
};

}  // namespace devices

#endif  // DEVICES_THREAD_BINDING_H_
