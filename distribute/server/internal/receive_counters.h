// What a Server has received for its transport endpoints, counted by the
// paths that deliver messages (gRPC Deliver streams and the grpc+tcp data
// plane) and read by Server::received().
#ifndef DISTRIBUTE_SERVER_INTERNAL_RECEIVE_COUNTERS_H_
#define DISTRIBUTE_SERVER_INTERNAL_RECEIVE_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace distribute {
namespace server_internal {

struct ReceiveCounters {
  std::atomic<int64_t> messages{0};
  std::atomic<int64_t> chunks{0};
  std::atomic<int64_t> bytes{0};

  void Message() { messages.fetch_add(1, std::memory_order_relaxed); }
  void Chunk(int64_t n) {
    chunks.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(n, std::memory_order_relaxed);
  }
};

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_RECEIVE_COUNTERS_H_
