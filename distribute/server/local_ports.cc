#include "distribute/server/local_ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

namespace distribute {

absl::StatusOr<std::vector<int>> UnusedLocalPorts(int n) {
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("asked for ", n, " ports; ask for 0 or more"));
  }
  std::vector<int> fds, ports;
  absl::Status failure;
  for (int i = 0; i < n && failure.ok(); ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      failure = absl::UnavailableError(
          absl::StrCat("socket failed: ", std::strerror(errno)));
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      failure = absl::UnavailableError(
          absl::StrCat("bind to 127.0.0.1:0 failed: ", std::strerror(errno)));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  // Held open until all are chosen, so the ports are distinct.
  for (int fd : fds) close(fd);
  RETURN_IF_ERROR(failure);
  return ports;
}

}  // namespace distribute
