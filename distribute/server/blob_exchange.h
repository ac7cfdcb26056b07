// Broadcast of a small opaque value from one task to the others over the
// tasks' Servers: the chief publishes it on its own server under a key made
// of a group name and an instance number, and every other task fetches it
// from the chief (waiting until it is published). This is how the NCCL
// unique id of a communicator spread over processes reaches every rank
// (nccl_bootstrap.h), and it serves any other bootstrap value the same way.
// The fetch carries the cluster token and is admitted by the chief's server
// like every other call.
//
// Example (every task runs this; task 0 is the chief):
//   absl::StatusOr<std::string> id = distribute::BroadcastBlob(
//       *server, cluster_addresses[0], /*is_chief=*/task == 0,
//       {"nccl-allreduce", /*instance=*/7},
//       [] { return MakeUniqueId(); }, absl::Seconds(60));
#ifndef DISTRIBUTE_SERVER_BLOB_EXCHANGE_H_
#define DISTRIBUTE_SERVER_BLOB_EXCHANGE_H_

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "distribute/server/channel.h"
#include "distribute/server/server.h"

namespace distribute {

// Names one value: a group (e.g. a communicator's name) and an instance
// (a new number each time the group is formed again).
struct BlobKey {
  std::string group;
  int64_t instance = 0;

  // "<group>/<instance>", the key on the wire.
  std::string ToString() const;
};

// Publishes `value` under `key` on `local`, the chief's own server.
// INVALID_ARGUMENT for an empty group or a negative instance; otherwise
// Server::PublishBlob's errors (ALREADY_EXISTS for another value under the
// same key, FAILED_PRECONDITION once the server has stopped).
absl::Status PublishBlob(Server& local, const BlobKey& key, std::string value);

// Fetches the value published under `key` on the server at `target`
// ("host:port" or "grpc://host:port"; the chief's for a broadcast), waiting
// up to `timeout` for that task to start and publish it. Errors:
// DEADLINE_EXCEEDED naming the key and the task's address when nothing came
// in time; UNAUTHENTICATED / PERMISSION_DENIED when the task refuses us
// (wrong token, address outside its cluster); UNAVAILABLE when the task
// stopped; INVALID_ARGUMENT for an empty group, a
// negative instance, an empty target or a non-positive timeout.
absl::StatusOr<std::string> FetchBlob(const ChannelOptions& options,
                                      absl::string_view target,
                                      const BlobKey& key,
                                      absl::Duration timeout);

// On the chief (is_chief): makes the value with `make`, publishes it on
// `local` and returns it. Elsewhere: fetches it from `chief_target` with
// local's channel options. Errors of `make`, PublishBlob or FetchBlob.
absl::StatusOr<std::string> BroadcastBlob(
    Server& local, absl::string_view chief_target, bool is_chief,
    const BlobKey& key, absl::FunctionRef<absl::StatusOr<std::string>()> make,
    absl::Duration timeout);

}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_BLOB_EXCHANGE_H_
