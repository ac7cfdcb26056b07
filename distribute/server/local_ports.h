// Ports of 127.0.0.1 for a cluster of this machine whose addresses must be
// known before its servers start (a cluster spec written up front).
//
//   absl::StatusOr<std::vector<int>> ports = distribute::UnusedLocalPorts(3);
//   // "127.0.0.1:" + (*ports)[i] for task i
//
// The ports were free a moment ago: each was bound (all at once, so they
// are distinct) and released. Another process may take one before a
// server binds it; a server then fails to start with UNAVAILABLE, and the
// caller may pick again. Where the system may choose the port, a server of
// its own (Server::CreateLocal) has no such race.
#ifndef DISTRIBUTE_SERVER_LOCAL_PORTS_H_
#define DISTRIBUTE_SERVER_LOCAL_PORTS_H_

#include <vector>

#include "absl/status/statusor.h"

namespace distribute {

// `n` distinct TCP ports of 127.0.0.1 that were free a moment ago.
// INVALID_ARGUMENT for n < 0; UNAVAILABLE naming the system call that
// failed (out of file descriptors or ports).
absl::StatusOr<std::vector<int>> UnusedLocalPorts(int n);

}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_LOCAL_PORTS_H_
