// The status code with which a collective group's ranks fail once one rank
// aborted the group, shared by every Transport and by DirectAccessGroup.
#ifndef DEVICES_ABORT_CODE_H_
#define DEVICES_ABORT_CODE_H_

#include "absl/status/status.h"

namespace devices {

// The code a transport group's requests fail with once a rank aborted the
// group for a reason of code `reason`: DEADLINE_EXCEEDED stays (a
// collective that timed out on one rank timed out for the whole group, so
// every rank reports the timeout), anything else becomes UNAVAILABLE (the
// group cannot go on).
inline absl::StatusCode GroupAbortCode(absl::StatusCode reason) {
  return reason == absl::StatusCode::kDeadlineExceeded
             ? absl::StatusCode::kDeadlineExceeded
             : absl::StatusCode::kUnavailable;
}

}  // namespace devices

#endif  // DEVICES_ABORT_CODE_H_
