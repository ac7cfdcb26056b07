// Benchmarks of the simulator's engine and network model.
//
//   BM_EngineEvents: events per second of the bare event queue (actors that
//     reschedule themselves at pseudo-random delays).
//   BM_Cluster1024RingShift: timing-only point-to-point traffic among 1024
//     GPUs (128 nodes x 8) on a two-level network built here directly: each
//     GPU has an NVLink-class port to its node switch, each node 8 NICs
//     (rail-aligned with the GPUs) into leaf switches, and the leaves an
//     ECMP-hashed, non-blocking spine. Every GPU sends to the GPU with the
//     same local index k nodes further on (a ring shift), for several rounds
//     with different shifts; each GPU starts its next round when its flow
//     completes.
//
//   bazel run -c opt //tools/bench:simulator_engine --
//   --benchmark_format=console
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "simulator/engine.h"
#include "simulator/network_model.h"
#include "simulator/time.h"

namespace simulator {
namespace {

void BM_EngineEvents(benchmark::State& state) {
  const int64_t actors = state.range(0);
  constexpr int64_t kEventsPerIteration = int64_t{1} << 20;
  int64_t total = 0;
  for (auto _ : state) {
    Engine engine;
    int64_t budget = kEventsPerIteration;
    struct Chain {
      Engine* engine;
      int64_t* budget;
      uint64_t state;
      ActorId actor;
    };
    std::vector<Chain> chains;
    chains.reserve(static_cast<size_t>(actors));
    for (int64_t a = 0; a < actors; ++a) {
      chains.push_back(
          Chain{&engine, &budget,
                0x9e3779b97f4a7c15ull * static_cast<uint64_t>(a + 1),
                static_cast<ActorId>(a)});
    }
    // Each event reschedules its actor 1..1024 ps later (a xorshift stream).
    struct Step {
      Chain* chain;
      void operator()() const {
        if (--*chain->budget <= 0) return;
        uint64_t x = chain->state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chain->state = x;
        chain->engine
            ->ScheduleAfter(static_cast<SimTime>(1 + (x & 1023)), chain->actor,
                            Step{chain})
            .IgnoreError();
      }
    };
    for (Chain& c : chains) {
      engine.ScheduleAt(0, c.actor, Step{&c}).IgnoreError();
    }
    total += engine.Run();
  }
  state.counters["events_per_second"] = benchmark::Counter(
      static_cast<double>(total), benchmark::Counter::kIsRate);
  state.counters["events"] =
      static_cast<double>(total) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_EngineEvents)
    ->Arg(16)
    ->Arg(1024)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond);

// The synthetic cluster: link ids by role.
struct Cluster {
  static constexpr int kNodes = 128;
  static constexpr int kGpusPerNode = 8;
  static constexpr int kNodesPerLeaf = 8;
  static constexpr int kLeaves = kNodes / kNodesPerLeaf;
  static constexpr int kSpines = 16;
  static constexpr int kGpus = kNodes * kGpusPerNode;

  std::vector<LinkId> gpu_up, gpu_down;     // [gpu]
  std::vector<LinkId> nic_up, nic_down;     // [node * 8 + nic]
  std::vector<LinkId> leaf_up, spine_down;  // [leaf * kSpines + spine]

  explicit Cluster(NetworkModel& net) {
    auto add = [&](std::string name, double bandwidth, SimTime latency) {
      return net.AddLink({std::move(name), bandwidth, latency}).value();
    };
    for (int g = 0; g < kGpus; ++g) {
      gpu_up.push_back(
          add(absl::StrCat("gpu", g, "->nvswitch"), 450e9, Nanoseconds(300)));
      gpu_down.push_back(
          add(absl::StrCat("nvswitch->gpu", g), 450e9, Nanoseconds(300)));
      nic_up.push_back(add(absl::StrCat("node", g / kGpusPerNode, "/nic",
                                        g % kGpusPerNode, "->leaf"),
                           50e9, Nanoseconds(500)));
      nic_down.push_back(add(absl::StrCat("leaf->node", g / kGpusPerNode,
                                          "/nic", g % kGpusPerNode),
                             50e9, Nanoseconds(500)));
    }
    for (int l = 0; l < kLeaves; ++l) {
      for (int s = 0; s < kSpines; ++s) {
        leaf_up.push_back(add(absl::StrCat("leaf", l, "->spine", s), 200e9,
                              Nanoseconds(500)));
        spine_down.push_back(add(absl::StrCat("spine", s, "->leaf", l), 200e9,
                                 Nanoseconds(500)));
      }
    }
  }

  static uint64_t Mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

  // GPU src -> GPU dst on another node, through NIC rails and the spine.
  std::vector<LinkId> Route(int src, int dst) const {
    const int src_node = src / kGpusPerNode;
    const int dst_node = dst / kGpusPerNode;
    std::vector<LinkId> route = {gpu_up[static_cast<size_t>(src)],
                                 nic_up[static_cast<size_t>(src)]};
    const int src_leaf = src_node / kNodesPerLeaf;
    const int dst_leaf = dst_node / kNodesPerLeaf;
    if (src_leaf != dst_leaf) {
      const int spine = static_cast<int>(
          Mix(static_cast<uint64_t>(src) * kGpus + static_cast<uint64_t>(dst)) %
          kSpines);
      route.push_back(leaf_up[static_cast<size_t>(src_leaf * kSpines + spine)]);
      route.push_back(
          spine_down[static_cast<size_t>(spine * kLeaves + dst_leaf)]);
    }
    route.push_back(nic_down[static_cast<size_t>(dst)]);
    route.push_back(gpu_down[static_cast<size_t>(dst)]);
    return route;
  }
};

void BM_Cluster1024RingShift(benchmark::State& state) {
  const int rounds = static_cast<int>(state.range(0));
  constexpr int64_t kBytes = int64_t{4} << 20;
  int64_t flows = 0;
  int64_t events = 0;
  SimTime sim_time = 0;
  for (auto _ : state) {
    Engine engine;
    NetworkModel net(engine);
    const Cluster cluster(net);
    int64_t completed = 0;
    // Round r shifts by 1 + 13r nodes: near (mostly within a leaf) and far.
    struct Sender {
      Engine* engine;
      NetworkModel* net;
      const Cluster* cluster;
      int64_t* completed;
      int gpu;
      int rounds;
      void Send(int round) const {
        const int shift_nodes = (1 + 13 * round) % Cluster::kNodes;
        const int dst =
            (gpu + shift_nodes * Cluster::kGpusPerNode) % Cluster::kGpus;
        const Sender self = *this;
        net->StartFlow(
               {cluster->Route(gpu, dst), kBytes, engine->now(), "", {}, 0},
               [self, round](const FlowResult& r) {
                 if (!r.status.ok()) return;
                 ++*self.completed;
                 if (round + 1 < self.rounds) self.Send(round + 1);
               })
            .IgnoreError();
      }
    };
    for (int g = 0; g < Cluster::kGpus; ++g) {
      Sender{&engine, &net, &cluster, &completed, g, rounds}.Send(0);
    }
    engine.Run();
    flows += completed;
    events += engine.events_processed();
    sim_time = engine.now();
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["flows"] = static_cast<double>(flows) / iterations;
  state.counters["events"] = static_cast<double>(events) / iterations;
  state.counters["sim_time_us"] =
      static_cast<double>(sim_time) / static_cast<double>(Microseconds(1));
}
BENCHMARK(BM_Cluster1024RingShift)
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace simulator
