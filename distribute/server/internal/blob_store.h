// The values a Server publishes for other tasks to fetch (FetchBlob RPC):
// opaque byte blobs under string keys, each set once, such as the NCCL
// unique id of a communicator group. Fetchers wait, bounded by a deadline,
// until the value is published.
//
// Example:
//   server_internal::BlobStore store;
//   store.Publish("nccl/group-a/3", id);
//   absl::StatusOr<std::string> value = store.Wait(
//       "nccl/group-a/3", absl::Now() + absl::Seconds(5), [] { return false;
//       });
#ifndef DISTRIBUTE_SERVER_INTERNAL_BLOB_STORE_H_
#define DISTRIBUTE_SERVER_INTERNAL_BLOB_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace distribute {
namespace server_internal {

class BlobStore {
 public:
  BlobStore() = default;
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  // Sets `key` to `value` and wakes its waiters. Publishing the same value
  // again is OK; ALREADY_EXISTS if the key holds another value;
  // INVALID_ARGUMENT for an empty key; FAILED_PRECONDITION after Shutdown.
  absl::Status Publish(absl::string_view key, std::string value);

  // The value of `key`, waiting for it until `deadline`:
  // DEADLINE_EXCEEDED when it passes, CANCELLED once `cancelled()` returns
  // true (polled every 50 ms), UNAVAILABLE after Shutdown (with its status's
  // message).
  absl::StatusOr<std::string> Wait(absl::string_view key, absl::Time deadline,
                                   const std::function<bool()>& cancelled);

  // Waits until Wait has returned the value of `key` `count` times in all
  // (to fetchers, over the store's life): OK; DEADLINE_EXCEEDED when
  // `deadline` passes first; UNAVAILABLE after Shutdown.
  absl::Status AwaitFetches(absl::string_view key, int64_t count,
                            absl::Time deadline);

  // Wakes every waiter with `status` (UNAVAILABLE expected) and refuses
  // later calls.
  void Shutdown(const absl::Status& status);

 private:
  absl::Mutex mu_;
  std::map<std::string, std::string, std::less<>> values_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t, std::less<>> fetches_ ABSL_GUARDED_BY(mu_);
  absl::Status shutdown_ ABSL_GUARDED_BY(mu_);
};

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_BLOB_STORE_H_
