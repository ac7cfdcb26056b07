#include "simulator/network_model.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/engine.h"
#include "simulator/faults.h"
#include "simulator/time.h"
#include "simulator/trace.h"

namespace simulator {
namespace {

// Collects flow results by flow id.
struct Results {
  std::map<FlowId, FlowResult> by_id;
  FlowCallback Callback() {
    return [this](const FlowResult& r) { by_id[r.id] = r; };
  }
};

class NetworkModelTest : public ::testing::Test {
 protected:
  LinkId Link(const std::string& name, double bandwidth, SimTime latency = 0) {
    absl::StatusOr<LinkId> id = net_.AddLink({name, bandwidth, latency});
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(-1);
  }
  FlowId Flow(std::vector<LinkId> route, int64_t bytes, SimTime start = 0,
              std::string label = "") {
    absl::StatusOr<FlowId> id = net_.StartFlow(
        {std::move(route), bytes, start, std::move(label), {}, 0},
        results_.Callback());
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(~FlowId{0});
  }

  Engine engine_;
  Trace trace_;
  NetworkModel net_{engine_, &trace_};
  Results results_;
};

TEST_F(NetworkModelTest, OneFlowOneLink) {
  const LinkId l = Link("a->b", 1e9, Nanoseconds(100));
  const FlowId now = Flow({l}, 4000);
  engine_.Run();
  const FlowId later = Flow({l}, 4000, engine_.now() + Microseconds(1));
  engine_.Run();
  ASSERT_EQ(results_.by_id.size(), 2u);
  const FlowResult& a = results_.by_id[now];
  EXPECT_TRUE(a.status.ok()) << a.status;
  EXPECT_EQ(a.start_time, 0);
  // 4000 B at 1e9 B/s = 4us, plus 100ns of latency.
  EXPECT_EQ(a.end_time, Microseconds(4) + Nanoseconds(100));
  EXPECT_EQ(a.bytes_sent, 4000);
  const FlowResult& b = results_.by_id[later];
  EXPECT_EQ(b.start_time, Microseconds(5) + Nanoseconds(100));
  EXPECT_EQ(b.end_time, Microseconds(9) + Nanoseconds(200));
}

TEST_F(NetworkModelTest, TwoFlowsShareALinkAndTheSurvivorSpeedsUp) {
  const LinkId l = Link("a->b", 1e9);
  const FlowId small = Flow({l}, 1000);
  const FlowId big = Flow({l}, 3000);
  engine_.RunUntil(0);  // settle the rates at t = 0
  EXPECT_EQ(net_.FlowRate(small).value(), 5e8);
  EXPECT_EQ(net_.FlowRate(big).value(), 5e8);
  engine_.RunUntil(Microseconds(3));
  // small: 1000 B at 0.5e9 B/s -> 2us. big: 1000 B by then, 2000 B at 1e9.
  EXPECT_EQ(results_.by_id[small].end_time, Microseconds(2));
  EXPECT_EQ(net_.FlowRate(big).value(), 1e9);
  EXPECT_EQ(net_.FlowRate(small).status().code(), absl::StatusCode::kNotFound);
  engine_.Run();
  EXPECT_EQ(results_.by_id[big].end_time, Microseconds(4));
  EXPECT_EQ(net_.active_flows(), 0);
}

TEST_F(NetworkModelTest, LateJoinerSharesFromItsStart) {
  const LinkId l = Link("a->b", 1e9);
  const FlowId first = Flow({l}, 3000);
  const FlowId second = Flow({l}, 1000, Microseconds(1));
  engine_.Run();
  // first alone for 1us (1000 B), then both at 0.5e9: second ends at 3us;
  // first has 1000 B left at 1e9 -> 4us.
  EXPECT_EQ(results_.by_id[second].end_time, Microseconds(3));
  EXPECT_EQ(results_.by_id[first].end_time, Microseconds(4));
}

TEST_F(NetworkModelTest, ThreeFlowsOnTwoLinksAreMaxMinNotEqualShare) {
  const LinkId l1 = Link("l1", 3e9);
  const LinkId l2 = Link("l2", 1e9);
  const FlowId a = Flow({l1}, 5000);
  const FlowId b = Flow({l1, l2}, 500);
  const FlowId c = Flow({l2}, 2000);
  engine_.RunUntil(0);
  // l2 is the bottleneck: b and c get 0.5e9 each; a gets the rest of l1
  // (2.5e9), not an equal third or half of it.
  EXPECT_EQ(net_.FlowRate(b).value(), 5e8);
  EXPECT_EQ(net_.FlowRate(c).value(), 5e8);
  EXPECT_EQ(net_.FlowRate(a).value(), 2.5e9);
  engine_.Run();
  // b: 500 B at 0.5e9 -> 1us. Then a has 2500 B left at 3e9 -> 833333.3 ps,
  // and c has 1500 B left at 1e9 -> 1.5us.
  EXPECT_EQ(results_.by_id[b].end_time, Microseconds(1));
  EXPECT_EQ(results_.by_id[a].end_time, Microseconds(1) + 833'333);
  EXPECT_EQ(results_.by_id[c].end_time, Microseconds(2) + Nanoseconds(500));
}

TEST_F(NetworkModelTest, FlowAcrossASwitchHasBottleneckAndLatencySum) {
  const LinkId up = Link("gpu0->switch", 2e9, Microseconds(1));
  const LinkId down = Link("switch->gpu1", 1e9, Nanoseconds(500));
  const FlowId main = Flow({up, down}, 3000);
  const FlowId side = Flow({up}, 1000);  // uses what `main` cannot
  engine_.RunUntil(0);
  EXPECT_EQ(net_.FlowRate(main).value(), 1e9);
  EXPECT_EQ(net_.FlowRate(side).value(), 1e9);
  engine_.Run();
  // side: 1000 B at 1e9 -> 1us, + 1us latency.
  EXPECT_EQ(results_.by_id[side].end_time, Microseconds(2));
  // main: 3000 B at the 1e9 bottleneck -> 3us, + 1.5us of latency.
  EXPECT_EQ(results_.by_id[main].end_time, Microseconds(4) + Nanoseconds(500));
}

TEST_F(NetworkModelTest, RouteOnATorusPath) {
  // A 4x4 torus: every node has +x, -x, +y, -y links.
  constexpr int kSide = 4;
  std::map<std::string, LinkId> links;
  for (int x = 0; x < kSide; ++x) {
    for (int y = 0; y < kSide; ++y) {
      const std::string from = absl::StrCat("(", x, ",", y, ")");
      const int nx[] = {(x + 1) % kSide, (x + kSide - 1) % kSide, x, x};
      const int ny[] = {y, y, (y + 1) % kSide, (y + kSide - 1) % kSide};
      for (int d = 0; d < 4; ++d) {
        const std::string name =
            absl::StrCat(from, "->(", nx[d], ",", ny[d], ")");
        links[name] = Link(name, 100e9, Nanoseconds(50));
      }
    }
  }
  // (0,0) -> (2,3): +x, +x, then -y across the wrap-around.
  const std::vector<LinkId> long_route = {links.at("(0,0)->(1,0)"),
                                          links.at("(1,0)->(2,0)"),
                                          links.at("(2,0)->(2,3)")};
  const std::vector<LinkId> short_route = {links.at("(0,0)->(1,0)"),
                                           links.at("(1,0)->(2,0)")};
  const FlowId a = Flow(long_route, 1'000'000);
  const FlowId b = Flow(short_route, 2'000'000);
  engine_.Run();
  // Both share two links at 50e9 each: a drains at 1e6/50e9 = 20us; b has
  // 1e6 B left at 100e9 -> 10us more.
  EXPECT_EQ(results_.by_id[a].end_time, Microseconds(20) + Nanoseconds(150));
  EXPECT_EQ(results_.by_id[b].end_time, Microseconds(30) + Nanoseconds(100));
}

TEST_F(NetworkModelTest, ZeroBytesAndEmptyRoutesCostOnlyLatency) {
  const LinkId l = Link("a->b", 1e9, Nanoseconds(300));
  const FlowId empty = Flow({l}, 0);
  const FlowId local = Flow({}, 5000);
  engine_.Run();
  EXPECT_EQ(results_.by_id[empty].end_time, Nanoseconds(300));
  EXPECT_TRUE(results_.by_id[empty].status.ok());
  EXPECT_EQ(results_.by_id[local].end_time, 0);
  EXPECT_EQ(results_.by_id[local].bytes_sent, 5000);
}

TEST_F(NetworkModelTest, CallbacksMayStartFlows) {
  const LinkId l = Link("a->b", 1e9, Nanoseconds(10));
  int remaining = 50;
  SimTime last_end = 0;
  std::function<void(const FlowResult&)> chain = [&](const FlowResult& r) {
    ASSERT_TRUE(r.status.ok());
    last_end = r.end_time;
    if (--remaining == 0) return;
    ASSERT_TRUE(
        net_.StartFlow({{l}, 1000, engine_.now(), "chain", {}, 0}, chain).ok());
  };
  ASSERT_TRUE(net_.StartFlow({{l}, 1000, 0, "chain", {}, 0}, chain).ok());
  engine_.Run();
  EXPECT_EQ(remaining, 0);
  EXPECT_EQ(last_end, 50 * (Microseconds(1) + Nanoseconds(10)));
}

TEST_F(NetworkModelTest, RejectsBadLinksAndFlows) {
  EXPECT_EQ(net_.AddLink({"", 1e9, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.AddLink({"x", 0, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.AddLink({"x", INFINITY, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.AddLink({"x", 1e9, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const LinkId l = Link("x", 1e9);
  EXPECT_EQ(net_.AddLink({"x", 1e9, 0}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(net_.FindLink("x").value(), l);
  EXPECT_EQ(net_.FindLink("y").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(net_.num_links(), 1);

  auto start = [&](FlowSpec spec) {
    return net_.StartFlow(std::move(spec), results_.Callback()).status().code();
  };
  EXPECT_EQ(start({{l + 1}, 10, 0, "", {}, 0}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(start({{-1}, 10, 0, "", {}, 0}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(start({{l, l}, 10, 0, "", {}, 0}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(start({{l}, -1, 0, "", {}, 0}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.StartFlow({{l}, 10, 0, "", {}, 0}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Multiplicities: one per link, each at least 1; no negative latency.
  EXPECT_EQ(start({{l}, 10, 0, "", {1, 1}, 0}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(start({{l}, 10, 0, "", {0}, 0}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(start({{l}, 10, 0, "", {}, -1}),
            absl::StatusCode::kInvalidArgument);
  engine_.RunUntil(Microseconds(1));
  EXPECT_EQ(start({{l}, 10, 0, "", {}, 0}), absl::StatusCode::kInvalidArgument);
  engine_.Run();
  EXPECT_TRUE(results_.by_id.empty());
  EXPECT_EQ(net_.CutLink(5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.RestoreLink(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.SetLinkSlowdown(l, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.SetLinkSlowdown(l, NAN).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NetworkModelTest, CutLinkFailsItsFlowsAndRefusesNewOnes) {
  const LinkId cut = Link("spine/3", 1e9, Nanoseconds(100));
  const LinkId other = Link("spine/4", 1e9);
  const FlowId a = Flow({cut}, 2000, 0, "a");
  const FlowId b = Flow({cut, other}, 1000, 0, "b");
  const FlowId c = Flow({other}, 1500, 0, "c");
  const FlowId pending = Flow({cut}, 10, Microseconds(5), "pending");
  engine_.RunUntil(Microseconds(1));
  ASSERT_TRUE(net_.CutLink(cut).ok());
  ASSERT_TRUE(net_.CutLink(cut).ok());  // idempotent
  // A new flow now fails at once, and `done` is not called.
  const absl::StatusOr<FlowId> refused = net_.StartFlow(
      {{other, cut}, 10, engine_.now(), "new", {}, 0}, results_.Callback());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "spine/3"));
  engine_.Run();
  for (const FlowId id : {a, b, pending}) {
    const FlowResult& r = results_.by_id[id];
    EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable) << id;
    EXPECT_TRUE(absl::StrContains(r.status.message(), "link 'spine/3'"))
        << r.status;
  }
  // a and b each sent 0.5e9 B/s x 1us before the cut.
  EXPECT_EQ(results_.by_id[a].end_time, Microseconds(1));
  EXPECT_EQ(results_.by_id[a].bytes_sent, 500);
  EXPECT_EQ(results_.by_id[b].bytes_sent, 500);
  EXPECT_EQ(results_.by_id[pending].end_time, Microseconds(5));
  // c shared `other` with b at 0.5e9 for 1us, then ran alone at 1e9.
  EXPECT_TRUE(results_.by_id[c].status.ok());
  EXPECT_EQ(results_.by_id[c].end_time, Microseconds(2));
  EXPECT_EQ(results_.by_id.size(), 4u);
  // Restored, the link carries flows again.
  ASSERT_TRUE(net_.RestoreLink(cut).ok());
  const FlowId after = Flow({cut}, 1000, engine_.now());
  engine_.Run();
  EXPECT_TRUE(results_.by_id[after].status.ok());
  EXPECT_EQ(results_.by_id[after].end_time, Microseconds(6) + Nanoseconds(100));
}

TEST_F(NetworkModelTest, SlowdownStretchesTheRestOfTheTransfer) {
  const LinkId l = Link("a->b", 1e9);
  const FlowId f = Flow({l}, 2000);
  engine_.RunUntil(Microseconds(1));
  ASSERT_TRUE(net_.SetLinkSlowdown(l, 2).ok());
  engine_.Run();
  // 1000 B in the first us, then 1000 B at 0.5e9 -> 2us.
  EXPECT_EQ(results_.by_id[f].end_time, Microseconds(3));
  ASSERT_TRUE(net_.SetLinkSlowdown(l, 1).ok());
  const FlowId g = Flow({l}, 2000, engine_.now());
  engine_.Run();
  EXPECT_EQ(results_.by_id[g].end_time, Microseconds(5));
}

TEST_F(NetworkModelTest, SlowdownThatRelievesASharedLinkSpeedsUpItsOtherFlow) {
  const LinkId shared = Link("shared", 10e9);
  const LinkId g_only = Link("g-only", 8e9);
  const LinkId h_only = Link("h-only", 8e9);
  const FlowId g = Flow({g_only, shared}, 1'000'000'000);
  const FlowId h = Flow({h_only, shared}, 1'000'000'000);
  engine_.RunUntil(0);
  EXPECT_EQ(net_.FlowRate(g).value(), 5e9);
  EXPECT_EQ(net_.FlowRate(h).value(), 5e9);
  // g's own link drops to 2e9: the shared link no longer limits h.
  ASSERT_TRUE(net_.SetLinkSlowdown(g_only, 4).ok());
  engine_.RunUntil(0);
  EXPECT_EQ(net_.FlowRate(g).value(), 2e9);
  EXPECT_EQ(net_.FlowRate(h).value(), 8e9);
  // And back: the shared link limits both again.
  ASSERT_TRUE(net_.SetLinkSlowdown(g_only, 1).ok());
  engine_.RunUntil(0);
  EXPECT_EQ(net_.FlowRate(g).value(), 5e9);
  EXPECT_EQ(net_.FlowRate(h).value(), 5e9);
}

// A flow with multiplicities stands for that many flows on each link: on a
// network of one link per class of equivalent links it gets the rate each
// of those flows gets on the full network.
TEST(NetworkModelMultiplicityTest, ClassFlowsGetTheFullNetworksRates) {
  // Full: uplinks u0, u1 (10 GB/s each) into a shared link s (30 GB/s);
  // flows a0, a1 over u_i and s, b0, b1 over s alone, c over u0 alone.
  Engine full_engine;
  NetworkModel full(full_engine);
  const LinkId u0 = full.AddLink({"u0", 10e9, 0}).value();
  const LinkId u1 = full.AddLink({"u1", 10e9, 0}).value();
  const LinkId shared = full.AddLink({"s", 30e9, 0}).value();
  Results full_results;
  std::vector<FlowId> a, b;
  for (const LinkId u : {u0, u1}) {
    a.push_back(full.StartFlow({{u, shared}, 1'000'000, 0, "a", {}, 0},
                               full_results.Callback())
                    .value());
  }
  for (int i = 0; i < 2; ++i) {
    b.push_back(full.StartFlow({{shared}, 1'000'000, 0, "b", {}, 0},
                               full_results.Callback())
                    .value());
  }
  const FlowId c =
      full.StartFlow({{u0}, 1'000'000, 0, "c", {}, 0}, full_results.Callback())
          .value();
  full_engine.RunUntil(0);
  // u0 carries a0 and c (5 each); s shares the other 25 among a1, b0, b1.
  EXPECT_EQ(full.FlowRate(c).value(), 5e9);
  EXPECT_EQ(full.FlowRate(a[0]).value(), 5e9);

  // b0 and b1 are equivalent: one flow standing for 2 on s. (a0 and a1 are
  // not: u0 also carries c.)
  Engine engine;
  NetworkModel quotient(engine);
  const LinkId q0 = quotient.AddLink({"u0", 10e9, 0}).value();
  const LinkId q1 = quotient.AddLink({"u1", 10e9, 0}).value();
  const LinkId qs = quotient.AddLink({"s", 30e9, 0}).value();
  Results results;
  const FlowId qa0 =
      quotient
          .StartFlow({{q0, qs}, 1'000'000, 0, "a0", {}, 0}, results.Callback())
          .value();
  const FlowId qa1 =
      quotient
          .StartFlow({{q1, qs}, 1'000'000, 0, "a1", {}, 0}, results.Callback())
          .value();
  const FlowId qb =
      quotient.StartFlow({{qs}, 1'000'000, 0, "b", {2}, 0}, results.Callback())
          .value();
  const FlowId qc =
      quotient
          .StartFlow({{q0}, 1'000'000, 0, "c", {}, Microseconds(3)},
                     results.Callback())
          .value();
  engine.RunUntil(0);
  EXPECT_EQ(quotient.FlowRate(qa0).value(), full.FlowRate(a[0]).value());
  EXPECT_EQ(quotient.FlowRate(qa1).value(), full.FlowRate(a[1]).value());
  EXPECT_EQ(quotient.FlowRate(qb).value(), full.FlowRate(b[0]).value());
  EXPECT_EQ(quotient.FlowRate(qb).value(), full.FlowRate(b[1]).value());
  full_engine.Run();
  engine.Run();
  EXPECT_EQ(results.by_id[qb].end_time, full_results.by_id[b[0]].end_time);
  EXPECT_EQ(results.by_id[qa1].end_time, full_results.by_id[a[1]].end_time);
  // extra_latency adds to the delivery.
  EXPECT_EQ(results.by_id[qc].end_time,
            full_results.by_id[c].end_time + Microseconds(3));
  // Link accounting counts every flow a class flow stands for.
  Summary summary;
  summary.end_time = engine.now();
  quotient.AddToSummary(summary);
  EXPECT_EQ(summary.links[2].flows, 4);
  EXPECT_EQ(summary.links[2].bytes, 4'000'000);
}

TEST(NetworkModelFaultsTest, ScriptCutsAndSlowsLinks) {
  Engine engine;
  FaultScript script;
  script.CutLink("b", FaultTrigger::AtOperation(2))
      .SlowLink("a", 4, FaultTrigger::AtTime(Microseconds(1)));
  FaultInjector faults(engine, std::move(script));
  NetworkModel net(engine, nullptr, &faults);
  const LinkId a = net.AddLink({"a", 1e9, 0}).value();
  const LinkId b = net.AddLink({"b", 1e9, 0}).value();
  ASSERT_TRUE(faults.Arm().ok());
  Results results;
  const FlowId on_a =
      net.StartFlow({{a}, 2000, 0, "", {}, 0}, results.Callback()).value();
  const FlowId first_on_b =
      net.StartFlow({{b}, 4000, 0, "", {}, 0}, results.Callback()).value();
  engine.RunUntil(Microseconds(2));
  // The second flow on b is b's second operation: the cut hits it and the
  // first flow, which is still sending.
  const absl::StatusOr<FlowId> second_on_b =
      net.StartFlow({{b}, 10, engine.now(), "", {}, 0}, results.Callback());
  EXPECT_EQ(second_on_b.status().code(), absl::StatusCode::kUnavailable);
  engine.Run();
  EXPECT_EQ(results.by_id[first_on_b].status.code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(results.by_id[first_on_b].bytes_sent, 2000);
  // a: 1000 B in 1us, then 1000 B at 0.25e9 -> 4us more.
  EXPECT_EQ(results.by_id[on_a].end_time, Microseconds(5));
  ASSERT_EQ(faults.fired().size(), 2u);
  EXPECT_EQ(faults.fired()[1].time, Microseconds(2));
}

TEST_F(NetworkModelTest, SummaryAndTraceShowPerLinkLoad) {
  const LinkId l = Link("a->b", 1e9);
  Link("unused", 1e9);
  Flow({l}, 1000);
  Flow({l}, 3000);
  engine_.Run();
  Summary summary;
  summary.end_time = Microseconds(8);
  net_.AddToSummary(summary);
  ASSERT_EQ(summary.links.size(), 2u);
  EXPECT_EQ(summary.links[0].name, "a->b");
  EXPECT_EQ(summary.links[0].flows, 2);
  EXPECT_EQ(summary.links[0].bytes, 4000);
  EXPECT_EQ(summary.links[0].busy, Microseconds(4));
  EXPECT_DOUBLE_EQ(summary.links[0].utilisation, 0.5);
  EXPECT_EQ(summary.links[1].bytes, 0);
  const std::string json = trace_.ToJson();
  EXPECT_TRUE(absl::StrContains(
      json,
      "{\"name\":\"transfer\",\"cat\":\"network\",\"ph\":\"X\",\"ts\":0.000,"
      "\"dur\":2.000,\"pid\":1,\"tid\":1,\"args\":{\"flows\":2,\"bytes\":2000,"
      "\"bytes_per_s\":1000000000}}"))
      << json;
  EXPECT_TRUE(absl::StrContains(
      json,
      "\"ts\":2.000,\"dur\":2.000,\"pid\":1,\"tid\":1,\"args\":{\"flows\":1,"
      "\"bytes\":2000,\"bytes_per_s\":1000000000}}"))
      << json;
}

// Random flows on a random network: the rates must be max-min fair. Each
// link carries at most its capacity, and every flow has a bottleneck: a
// saturated link on its route where no flow gets more than it.
TEST(NetworkModelMaxMinTest, RandomNetworksAreMaxMinFair) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    Engine engine;
    NetworkModel net(engine);
    const int num_links = 3 + static_cast<int>(rng() % 10);
    std::vector<double> capacity;
    for (int i = 0; i < num_links; ++i) {
      capacity.push_back(1e9 * static_cast<double>(1 + rng() % 8));
      ASSERT_TRUE(net.AddLink({absl::StrCat("l", i), capacity.back(), 0}).ok());
    }
    std::vector<std::vector<LinkId>> routes;
    std::vector<FlowId> ids;
    const int num_flows = 1 + static_cast<int>(rng() % 25);
    for (int f = 0; f < num_flows; ++f) {
      std::vector<LinkId> route;
      for (int i = 0; i < num_links; ++i) {
        if (rng() % 3 == 0) route.push_back(i);
      }
      if (route.empty())
        route.push_back(static_cast<LinkId>(rng() % num_links));
      routes.push_back(route);
      ids.push_back(net.StartFlow({route, 1'000'000, 0, "", {}, 0},
                                  [](const FlowResult&) {})
                        .value());
    }
    engine.RunUntil(0);
    std::vector<double> rate(ids.size());
    std::vector<double> load(capacity.size(), 0);
    for (size_t f = 0; f < ids.size(); ++f) {
      rate[f] = net.FlowRate(ids[f]).value();
      EXPECT_GT(rate[f], 0);
      for (const LinkId l : routes[f]) load[static_cast<size_t>(l)] += rate[f];
    }
    for (size_t l = 0; l < capacity.size(); ++l) {
      EXPECT_LE(load[l], capacity[l] * (1 + 1e-12)) << "link " << l;
    }
    for (size_t f = 0; f < ids.size(); ++f) {
      bool has_bottleneck = false;
      for (const LinkId l : routes[f]) {
        const size_t li = static_cast<size_t>(l);
        if (load[li] < capacity[li] * (1 - 1e-9)) continue;
        bool largest = true;
        for (size_t g = 0; g < ids.size(); ++g) {
          for (const LinkId m : routes[g]) {
            if (m == l && rate[g] > rate[f] * (1 + 1e-9)) largest = false;
          }
        }
        has_bottleneck = has_bottleneck || largest;
      }
      EXPECT_TRUE(has_bottleneck) << "round " << round << " flow " << f;
    }
    engine.Run();
    EXPECT_EQ(net.active_flows(), 0);
  }
}

// Checks that the sending flows' rates are max-min fair: no link is over
// capacity, and every flow has a bottleneck (a saturated link on its route
// where no flow is faster). `routes` and `capacity` describe the network.
void ExpectMaxMinFair(const NetworkModel& net,
                      const std::map<FlowId, std::vector<LinkId>>& routes,
                      const std::vector<double>& capacity,
                      const std::string& where) {
  std::map<FlowId, double> rate;
  std::vector<double> load(capacity.size(), 0);
  std::vector<std::vector<FlowId>> on_link(capacity.size());
  for (const auto& [id, route] : routes) {
    absl::StatusOr<double> r = net.FlowRate(id);
    if (!r.ok()) continue;  // not sending
    rate[id] = *r;
    for (const LinkId l : route) {
      load[static_cast<size_t>(l)] += *r;
      on_link[static_cast<size_t>(l)].push_back(id);
    }
  }
  for (size_t l = 0; l < capacity.size(); ++l) {
    EXPECT_LE(load[l], capacity[l] * (1 + 1e-9)) << where << " link " << l;
  }
  for (const auto& [id, r] : rate) {
    EXPECT_GT(r, 0) << where << " flow " << id;
    bool has_bottleneck = false;
    for (const LinkId l : routes.at(id)) {
      const size_t li = static_cast<size_t>(l);
      if (load[li] < capacity[li] * (1 - 1e-9)) continue;
      bool fastest = true;
      for (const FlowId other : on_link[li]) {
        if (rate[other] > r * (1 + 1e-9)) fastest = false;
      }
      has_bottleneck = has_bottleneck || fastest;
    }
    EXPECT_TRUE(has_bottleneck) << where << " flow " << id;
  }
}

// A random workload on a random network: flows starting over time, some
// started from completion callbacks, and link slowdowns. Returns each flow's
// end time; with `check`, checks max-min fairness after every instant.
std::map<FlowId, SimTime> RunRandomWorkload(uint64_t seed, bool incremental,
                                            bool check) {
  std::mt19937_64 rng(seed);
  Engine engine;
  NetworkModel net(engine, nullptr, nullptr, NetworkModelOptions{incremental});
  // Odd seeds: hosts with their own up and down links around a few shared
  // core links (most links carry one flow, caps differ). Even seeds: routes
  // are random subsets of all links.
  const bool hosts = seed % 2 == 1;
  constexpr int kHosts = 6;
  constexpr int kCore = 3;
  const int num_links =
      hosts ? 2 * kHosts + kCore : 4 + static_cast<int>(rng() % 12);
  std::vector<double> nominal;
  std::vector<double> slowdown(static_cast<size_t>(num_links), 1.0);
  for (int i = 0; i < num_links; ++i) {
    nominal.push_back(1e9 * static_cast<double>(1 + rng() % 8));
    EXPECT_TRUE(
        net.AddLink({absl::StrCat("l", i), nominal.back(),
                     static_cast<SimTime>(rng() % 3) * Nanoseconds(100)})
            .ok());
  }
  auto random_route = [&] {
    std::vector<LinkId> route;
    if (hosts) {
      const int from = static_cast<int>(rng() % kHosts);
      const int to =
          (from + 1 + static_cast<int>(rng() % (kHosts - 1))) % kHosts;
      route.push_back(from);
      route.push_back(2 * kHosts + static_cast<int>(rng() % kCore));
      route.push_back(kHosts + to);
      return route;
    }
    for (int i = 0; i < num_links; ++i) {
      if (rng() % 4 == 0) route.push_back(i);
    }
    if (route.empty()) route.push_back(static_cast<LinkId>(rng() % num_links));
    return route;
  };
  std::map<FlowId, std::vector<LinkId>> routes;
  std::map<FlowId, SimTime> ends;
  std::function<void(int)> start_chain = [&](int remaining) {
    std::vector<LinkId> route = random_route();
    const int64_t bytes = static_cast<int64_t>(1000 + rng() % 100000);
    absl::StatusOr<FlowId> id =
        net.StartFlow({route, bytes, engine.now(), "", {}, 0},
                      [&, remaining](const FlowResult& r) {
                        EXPECT_TRUE(r.status.ok());
                        ends[r.id] = r.end_time;
                        if (remaining > 0) start_chain(remaining - 1);
                      });
    ASSERT_TRUE(id.ok()) << id.status();
    routes[*id] = std::move(route);
  };
  for (int i = 0; i < 30; ++i) {
    const SimTime at = static_cast<SimTime>(rng() % 50) * Nanoseconds(100);
    const int chain = static_cast<int>(rng() % 4);
    EXPECT_TRUE(
        engine.ScheduleAt(at, 0, [&, chain] { start_chain(chain); }).ok());
  }
  for (int i = 0; i < 15; ++i) {
    const SimTime at = static_cast<SimTime>(rng() % 100) * Nanoseconds(100);
    const size_t link =
        static_cast<size_t>(rng() % static_cast<uint64_t>(num_links));
    const double factor = 0.25 * static_cast<double>(1 + rng() % 16);
    EXPECT_TRUE(engine
                    .ScheduleAt(at, 1,
                                [&, link, factor] {
                                  slowdown[link] = factor;
                                  EXPECT_TRUE(
                                      net.SetLinkSlowdown(
                                             static_cast<LinkId>(link), factor)
                                          .ok());
                                })
                    .ok());
  }
  while (true) {
    const std::optional<SimTime> next = engine.NextEventTime();
    if (!next.has_value()) break;
    engine.RunUntil(*next);
    if (!check) continue;
    std::vector<double> capacity(nominal.size());
    for (size_t l = 0; l < nominal.size(); ++l) {
      capacity[l] = nominal[l] / slowdown[l];
    }
    ExpectMaxMinFair(net, routes, capacity,
                     absl::StrCat("seed ", seed, " at ", FormatTime(*next)));
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(net.active_flows(), 0);
  EXPECT_EQ(ends.size(), routes.size());
  return ends;
}

TEST(NetworkModelMaxMinTest, IncrementalRatesAreMaxMinFairAtEveryInstant) {
  for (uint64_t seed = 1; seed <= 60 && !::testing::Test::HasFailure();
       ++seed) {
    RunRandomWorkload(seed, /*incremental=*/true, /*check=*/true);
  }
}

TEST(NetworkModelMaxMinTest, IncrementalMatchesFullRecomputation) {
  int64_t flows = 0;
  int64_t exact = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const std::map<FlowId, SimTime> incremental =
        RunRandomWorkload(seed, /*incremental=*/true, /*check=*/false);
    const std::map<FlowId, SimTime> full =
        RunRandomWorkload(seed, /*incremental=*/false, /*check=*/true);
    ASSERT_EQ(incremental.size(), full.size());
    for (const auto& [id, end] : full) {
      ++flows;
      const SimTime difference = incremental.at(id) - end;
      // Rounding may differ in the last bit of a rate, hence a picosecond.
      EXPECT_LE(std::abs(difference), 2) << "seed " << seed << " flow " << id;
      if (difference == 0) ++exact;
    }
  }
  EXPECT_GT(flows, 1000);
  EXPECT_GE(exact, flows * 99 / 100);
}

}  // namespace
}  // namespace simulator
