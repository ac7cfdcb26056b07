// tf.distribute.experimental.CommunicationOptions and friends: how
// cross-device reductions should communicate.
//
//   CommunicationOptions options;
//   options.bytes_per_pack = 50 << 20;
//   options.timeout_seconds = 120;
//   options.implementation = CommunicationImplementation::kNccl;
//   CommunicationOptions merged = defaults.Merge(options);
//
// As in TF: bytes_per_pack 0 means "let the library decide" (one pack per
// dtype), a negative value is INVALID_ARGUMENT; timeout_seconds <= 0 or
// unset means no timeout (collectives wait as long as their peers live; see
// kDefaultCollectiveTimeout); Merge takes the other's fields where they
// are set. CollectiveCommunication is the old name of
// CommunicationImplementation, CollectiveHints the old options type.
#ifndef DISTRIBUTE_COLLECTIVE_COMMUNICATION_OPTIONS_H_
#define DISTRIBUTE_COLLECTIVE_COMMUNICATION_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace distribute {

enum class CommunicationImplementation { kAuto, kRing, kNccl };
using CollectiveCommunication = CommunicationImplementation;

// "AUTO", "RING", "NCCL" in any case.
absl::StatusOr<CommunicationImplementation> ParseCommunicationImplementation(
    absl::string_view name);
absl::string_view CommunicationImplementationName(
    CommunicationImplementation implementation);

// Without a timeout a collective waits as long as its peers take, as TF's
// do: a peer that is alive but slow (a chief writing a checkpoint for
// minutes, a long input step) must not fail the job. Peers that die are
// still found within seconds: a worker process's heartbeats
// (PeerMonitor) abort the group naming it, and a replica that fails aborts
// its group at once. timeout_seconds bounds the wait when a job wants it.
inline constexpr absl::Duration kDefaultCollectiveTimeout =
    absl::InfiniteDuration();

struct CommunicationOptions {
  int64_t bytes_per_pack = 0;
  std::optional<double> timeout_seconds;
  CommunicationImplementation implementation =
      CommunicationImplementation::kAuto;

  // INVALID_ARGUMENT for a negative bytes_per_pack.
  absl::Status Validate() const;
  // These options with every field that `other` sets (non-zero pack size,
  // a timeout, a non-AUTO implementation) taken from `other`.
  CommunicationOptions Merge(const CommunicationOptions& other) const;
  // The timeout to use for a wait: timeout_seconds if set and positive,
  // else kDefaultCollectiveTimeout (no bound).
  absl::Duration Timeout() const;
};

// tf.distribute.experimental.CollectiveHints (deprecated in TF): converts to
// CommunicationOptions.
struct CollectiveHints {
  int64_t bytes_per_pack = 0;
  std::optional<double> timeout_seconds;
  CommunicationOptions ToOptions() const {
    CommunicationOptions o;
    o.bytes_per_pack = bytes_per_pack;
    o.timeout_seconds = timeout_seconds;
    return o;
  }
};

}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_COMMUNICATION_OPTIONS_H_
