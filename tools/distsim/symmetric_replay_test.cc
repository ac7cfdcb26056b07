// The symmetry the replay exploits, found on small cases: a ring inside one
// node is one class of ranks; a hierarchical grid on two leaves of a fat
// tree keeps its classes only when the fabric routes by destination; a
// malformed schedule has no symmetry (the full replay reports it).
#include "tools/distsim/symmetric_replay.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "distribute/collective/builders.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/routing.h"
#include "simulator/topology.h"

namespace distsim {
namespace {

namespace dc = distribute::collective;

struct Case {
  simulator::Topology topology;
  std::vector<int> devices;  // the first n GPUs
};

Case OnGpus(const std::string& name, int n) {
  absl::StatusOr<simulator::Topology> topology =
      simulator::BuiltinTopology(name);
  EXPECT_TRUE(topology.ok()) << topology.status();
  Case c{*std::move(topology), {}};
  for (int d = 0;
       d < c.topology.num_devices() && static_cast<int>(c.devices.size()) < n;
       ++d) {
    if (c.topology.device(d).kind == simulator::DeviceDef::GPU) {
      c.devices.push_back(d);
    }
  }
  return c;
}

std::optional<SymmetryPlan> Find(const Case& c, const dc::Schedule& s) {
  simulator::Router router(c.topology);
  return FindSymmetry(s, c.devices, c.topology, [&](int src, int dst) {
    return router.Route(c.topology.device(src).node,
                        c.topology.device(dst).node);
  });
}

dc::Schedule Build(dc::Algorithm algorithm, int n, std::vector<int32_t> dims,
                   int32_t per_node) {
  dc::ScheduleOptions options;
  options.group_size = n;
  options.count = 1 << 16;
  options.ranks_per_node = per_node;
  options.dims = std::move(dims);
  absl::StatusOr<dc::Schedule> s =
      dc::BuildSchedule(dc::CollectiveOp::kAllReduce, algorithm, options);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

TEST(SymmetryTest, ARingInsideANodeIsOneClass) {
  const Case c = OnGpus("dgx_h100", 8);
  const dc::Schedule s = Build(dc::Algorithm::kRing, 8, {}, 8);
  std::optional<SymmetryPlan> plan = Find(c, s);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->representatives.size(), 1u);
  EXPECT_EQ(plan->quotient.group_size(), 1);
  EXPECT_EQ(plan->rank_class, std::vector<int>(8, 0));
  // One flow class (rank r to r + 1), crossing one GPU-to-NVSwitch link
  // and one NVSwitch-to-GPU link each: every link carries one of them.
  ASSERT_EQ(plan->flows.size(), 1u);
  for (const int64_t m : plan->flows[0].multiplicity) EXPECT_EQ(m, 1);
  int64_t links = 0;
  for (const QuotientLink& l : plan->links) links += l.members;
  EXPECT_EQ(links, 16);
}

TEST(SymmetryTest, LeavesKeepTheClassesOnlyUnderDestinationRouting) {
  // 64 nodes, two leaves per rail; the grid's last level crosses them.
  const dc::Schedule s = Build(dc::Algorithm::kHierarchical, 512, {8, 8, 8}, 8);
  std::optional<SymmetryPlan> dmodk =
      Find(OnGpus("dgx_h100_cluster:64", 512), s);
  ASSERT_TRUE(dmodk.has_value());
  EXPECT_LT(dmodk->representatives.size(), 512u / 2);
  std::optional<SymmetryPlan> ecmp =
      Find(OnGpus("dgx_h100_cluster:64,routing=ecmp", 512), s);
  EXPECT_FALSE(ecmp.has_value());
}

TEST(SymmetryTest, MalformedSchedulesHaveNone) {
  const Case c = OnGpus("dgx_h100", 8);
  dc::Schedule s = Build(dc::Algorithm::kRing, 8, {}, 8);
  // A send whose receive is gone.
  for (size_t i = 0; i < s.ranks[3].steps.size(); ++i) {
    if (s.ranks[3].steps[i].kind == dc::StepKind::kRecv) {
      s.ranks[3].steps[i].tag += 1000;
      break;
    }
  }
  EXPECT_FALSE(Find(c, s).has_value());
  // Devices that do not match the group.
  const dc::Schedule ok = Build(dc::Algorithm::kRing, 8, {}, 8);
  Case fewer = c;
  fewer.devices.pop_back();
  EXPECT_FALSE(Find(fewer, ok).has_value());
}

}  // namespace
}  // namespace distsim
