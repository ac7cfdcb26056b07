#include "distribute/server/local_ports.h"

#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace distribute {
namespace {

// The ports are distinct, usable, and a negative count is refused.
TEST(UnusedLocalPortsTest, DistinctPortsOrAClearError) {
  absl::StatusOr<std::vector<int>> ports = UnusedLocalPorts(16);
  ASSERT_TRUE(ports.ok()) << ports.status();
  ASSERT_EQ(ports->size(), 16u);
  const std::set<int> distinct(ports->begin(), ports->end());
  EXPECT_EQ(distinct.size(), 16u);
  for (const int port : *ports) {
    EXPECT_GT(port, 0);
    EXPECT_LE(port, 65535);
  }
  EXPECT_TRUE(UnusedLocalPorts(0)->empty());
  EXPECT_EQ(UnusedLocalPorts(-1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distribute
