// RunCollectiveSweep: plans each size (algorithm, counts, chunking) and
// measures it on a fresh simulated platform, or asks the NCCL model.
#include "tools/distsim/collective_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "devices/communicator.h"
#include "devices/device.h"
#include "devices/dtype.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/collective/builders.h"
#include "distribute/collective/cost_model.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_communicator.h"
#include "distribute/thread_group.h"
#include "simulator/group_hardware.h"
#include "simulator/nccl_model.h"
#include "simulator/sim_platform.h"
#include "simulator/time.h"
#include "simulator/topology.h"
#include "tools/distsim/schedule_replay.h"

namespace distsim {
namespace {

namespace dc = ::distribute::collective;

// Host-time safety net of one simulated collective (the simulation itself
// reports a deadlock long before).
constexpr absl::Duration kCollectiveTimeout = absl::Minutes(10);
// Sizes stop here, whatever max_bytes says (so that products cannot
// overflow).
constexpr int64_t kMaxBytes = int64_t{1} << 62;

// What stays fixed over the sweep.
struct Setup {
  SweepOp op = SweepOp::kAllReduce;
  bool nccl = false;
  bool is_auto = false;
  // The schedule algorithm; for an automatic all-reduce it is picked per
  // size.
  dc::Algorithm algorithm = dc::Algorithm::kRing;
  devices::DType dtype = devices::DType::kFloat32;
  int64_t element_size = 4;
  std::string spec;  // "sim:<topology>;timing"
  std::vector<std::string> device_names;
  std::vector<int> device_indices;  // topology devices, by rank
  bool rank_threads = false;
  bool symmetry = true;
  simulator::GroupHardware hardware;
  dc::GroupCosts costs;  // the cost model's view of the group
  int64_t message_budget = kDefaultMessageBudget;
  std::string trace_path;
  simulator::NcclRunOptions nccl_options;
  // SweepOptions::channels (0: the default), and what the default takes
  // where it splits: one channel per NIC of a node (1 on one node).
  int32_t requested_channels = 0;
  int32_t nic_channels = 1;
  std::vector<int32_t> dims;  // SweepOptions::dims
};

// What runs for one size.
struct Plan {
  dc::Algorithm algorithm = dc::Algorithm::kRing;
  std::string label;
  int64_t bytes = 0;
  int64_t count = 0;           // the schedule's count (see schedule.h)
  int64_t chunk_elements = 0;  // 0: no chunking
  int32_t channels = 1;        // dc::ScheduleOptions::num_channels
};

dc::CollectiveOp ScheduleOp(SweepOp op) {
  switch (op) {
    case SweepOp::kAllReduce:
      return dc::CollectiveOp::kAllReduce;
    case SweepOp::kAllGather:
      return dc::CollectiveOp::kAllGather;
    case SweepOp::kReduceScatter:
      return dc::CollectiveOp::kReduceScatter;
    case SweepOp::kBroadcast:
      return dc::CollectiveOp::kBroadcast;
    case SweepOp::kReduce:
      return dc::CollectiveOp::kReduce;
    case SweepOp::kAllToAll:
      return dc::CollectiveOp::kAllToAll;
    case SweepOp::kBarrier:
      return dc::CollectiveOp::kBarrier;
  }
  return dc::CollectiveOp::kAllReduce;
}

// The schedule algorithms of each operation; the first is what "auto"
// runs where no cost model chooses (all-reduce's is chosen per size).
std::vector<dc::Algorithm> AlgorithmsOf(SweepOp op) {
  using A = dc::Algorithm;
  switch (op) {
    case SweepOp::kAllReduce:
      return {A::kRing, A::kDoubleBinaryTree, A::kRecursiveHalvingDoubling,
              A::kDirect, A::kHierarchical};
    case SweepOp::kAllGather:
    case SweepOp::kReduceScatter:
      return {A::kRing, A::kHierarchical};
    case SweepOp::kBroadcast:
    case SweepOp::kReduce:
      // The ScheduleCommunicator's default first.
      return {A::kBinaryTree, A::kChain};
    case SweepOp::kAllToAll:
      return {A::kPairwise};
    case SweepOp::kBarrier:
      return {A::kDissemination};
  }
  return {};
}

absl::Status ResolveAlgorithm(const std::string& name, Setup& setup) {
  const std::vector<dc::Algorithm> known = AlgorithmsOf(setup.op);
  if (name == "nccl") {
    if (setup.op == SweepOp::kBarrier) {
      return absl::InvalidArgumentError(
          "NCCL has no barrier; use --algorithm=auto (dissemination)");
    }
    setup.nccl = true;
    return absl::OkStatus();
  }
  if (name == "auto") {
    setup.is_auto = true;
    setup.algorithm = known.front();
    return absl::OkStatus();
  }
  absl::StatusOr<dc::Algorithm> parsed = dc::AlgorithmFromName(name);
  if (parsed.ok() &&
      std::find(known.begin(), known.end(), *parsed) != known.end()) {
    setup.algorithm = *parsed;
    return absl::OkStatus();
  }
  std::string names = "auto";
  for (dc::Algorithm a : known)
    absl::StrAppend(&names, ", ", dc::AlgorithmName(a));
  if (setup.op != SweepOp::kBarrier) absl::StrAppend(&names, ", nccl");
  return absl::InvalidArgumentError(
      absl::StrCat("--algorithm=", name, " does not implement ",
                   SweepOpName(setup.op), "; use one of ", names));
}

// The devices of the group: the first `count` GPUs (else TPU cores, else
// CPUs), by topology index.
absl::StatusOr<std::vector<int>> PickDevices(const simulator::Topology& t,
                                             int64_t count) {
  std::vector<int> chosen;
  for (simulator::DeviceDef::Kind kind :
       {simulator::DeviceDef::GPU, simulator::DeviceDef::TPU_CORE,
        simulator::DeviceDef::CPU}) {
    for (const simulator::DeviceInfo& d : t.devices()) {
      if (d.kind == kind) chosen.push_back(d.index);
    }
    if (!chosen.empty()) break;
  }
  if (count < 0 || count > static_cast<int64_t>(chosen.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpus=", count, " but topology '", t.name(), "' has ", chosen.size(),
        " of them; use 1..", chosen.size(), " (0: all)"));
  }
  if (count > 0) chosen.resize(static_cast<size_t>(count));
  return chosen;
}

// Where `chosen` is every TPU core of a slice (topology.mesh()), reorders
// it by torus coordinates, the core fastest, then x, y and z, and returns
// the torus's dimensions in that order ({cores per chip, X, Y, Z}); else
// leaves it and returns an empty grid.
std::vector<int32_t> TorusOrder(const simulator::Topology& t,
                                std::vector<int>& chosen) {
  if (!t.mesh().has_value()) return {};
  const simulator::MeshShape& mesh = *t.mesh();
  const int64_t cores = mesh.NumChips() * mesh.cores_per_chip;
  if (static_cast<int64_t>(chosen.size()) != cores) return {};
  auto key = [&](int index) {
    const simulator::DeviceInfo& d = t.devices()[static_cast<size_t>(index)];
    const simulator::MeshCoordinates& c = *d.coordinates;
    return c.core + int64_t{mesh.cores_per_chip} *
                        (c.x + int64_t{mesh.x} * (c.y + int64_t{mesh.y} * c.z));
  };
  for (int index : chosen) {
    const simulator::DeviceInfo& d = t.devices()[static_cast<size_t>(index)];
    if (d.kind != simulator::DeviceDef::TPU_CORE || !d.coordinates.has_value())
      return {};
  }
  std::sort(chosen.begin(), chosen.end(),
            [&](int a, int b) { return key(a) < key(b); });
  return {mesh.cores_per_chip, mesh.x, mesh.y, mesh.z};
}

// The share of a rank's link bandwidth left to it when half the ranks send
// across the middle of the torus at once: the links the narrowest cut
// crosses (the cut across the longest axis: the slice's cross-section of
// chips, twice with wraparound) over n / 2 senders, at most 1.
double TorusBisectionFraction(const simulator::MeshShape& mesh, int n) {
  double cut = 0;
  for (int axis = 0; axis < 3; ++axis) {
    const int length = mesh.Size(axis);
    if (length < 2) continue;
    const double links = static_cast<double>(mesh.NumChips() / length) *
                         (mesh.Wraps(axis) ? 2 : 1);
    if (cut == 0 || links < cut) cut = links;
  }
  if (cut == 0 || n < 2) return 1.0;
  return std::min(1.0, cut / (n / 2.0));
}

// Channels are slices of the data, each its own schedule: more than a few
// dozen only multiply the messages.
constexpr int64_t kMaxChannels = 64;

// As NCCL, which runs at least one channel per NIC rail (tuning in
// src/graph/search.cc): one per NIC of a node (the node's network bandwidth
// over one rank's) when the group spans nodes; one inside a node, where a
// single schedule already drives every rank's own links.
int32_t DefaultChannels(const simulator::GroupHardware& hw) {
  if (hw.nodes <= 1 || !(hw.rank_net_bw_Bps > 0)) return 1;
  const double nics = std::round(hw.node_net_bw_Bps / hw.rank_net_bw_Bps);
  return static_cast<int32_t>(
      std::clamp<double>(nics, 1, std::max(1, hw.max_ranks_per_node)));
}

// NCCL gives a small message fewer channels, each at least about 32 KiB
// (enqueue.cc: NCCL_SIMPLE_THREAD_THRESHOLD, 64 bytes for each of a
// channel's 512 threads).
constexpr int64_t kMinChannelBytes = 32 << 10;

bool Splits(SweepOp op) {
  return op == SweepOp::kAllReduce || op == SweepOp::kBroadcast ||
         op == SweepOp::kReduce;
}

// The cost model's view of the group: link bandwidths and latencies from
// the topology's routes; the cost model's default per-message overhead (the
// simulated transport charges none, but real ones do, and without it the
// model would send small messages to all 127 peers of a 128-GPU group at
// once, the slowest thing to simulate); and free reductions, as the
// simulation charges them (the executor's reductions take no simulated
// time), so that no chunking is chosen only to hide them.
dc::GroupCosts GroupCostsOf(const simulator::GroupHardware& hw) {
  dc::GroupCosts t;
  t.n = hw.n;
  t.ranks_per_node = hw.nodes > 1 ? hw.max_ranks_per_node : 0;
  double intra = hw.intra_bw_Bps > 0 ? hw.intra_bw_Bps : hw.rank_net_bw_Bps;
  double inter = hw.rank_net_bw_Bps > 0 ? hw.rank_net_bw_Bps : intra;
  if (!(intra > 0)) intra = inter = 1e9;  // one rank: nothing is sent
  t.intra_bw_Bps = intra;
  t.inter_bw_Bps = inter;
  t.intra_latency_us = hw.intra_latency_us;
  t.inter_latency_us = hw.nodes > 1 ? hw.net_latency_us : hw.intra_latency_us;
  t.reduce_bw_Bps = 0;
  t.bisection_fraction = 1.0;
  return t;
}

// Schedule options of `plan` with no chunking.
dc::ScheduleOptions Unchunked(const Setup& setup, const Plan& plan) {
  dc::ScheduleOptions o;
  o.group_size = setup.hardware.n;
  o.count = plan.count;
  o.root = 0;
  o.ranks_per_node = setup.costs.ranks_per_node == 0
                         ? setup.hardware.n
                         : setup.costs.ranks_per_node;
  o.num_channels = plan.channels;
  if (plan.algorithm == dc::Algorithm::kHierarchical) {
    o.dims = setup.dims.empty() ? setup.costs.grid : setup.dims;
  }
  return o;
}

// Grows `preferred` (elements, 0: no chunking) until the collective sends
// at most the budget's messages.
absl::StatusOr<int64_t> BudgetedChunk(const Setup& setup, const Plan& plan,
                                      int64_t preferred) {
  if (preferred <= 0) return 0;
  ASSIGN_OR_RETURN(dc::Schedule unchunked,
                   dc::BuildSchedule(ScheduleOp(setup.op), plan.algorithm,
                                     Unchunked(setup, plan)));
  const int64_t messages = unchunked.NumMessages();
  const int64_t elements = unchunked.ElementsSent();
  // Chunks of c elements send at most messages + elements / c messages.
  if (messages >= setup.message_budget) return 0;
  const int64_t spare = setup.message_budget - messages;
  return std::max(preferred, (elements + spare - 1) / spare);
}

// The channels a size runs on: --channels where given; else, across
// nodes, one per NIC for the algorithms whose traffic between nodes leaves
// through a few ranks (ring, tree, chain, binary_tree), fewer for small
// messages, as NCCL; rhd, direct and hierarchical already spread theirs
// over every rank of a node, and keep one.
int32_t ChannelsFor(const Setup& setup, dc::Algorithm algorithm,
                    int64_t bytes) {
  if (!Splits(setup.op)) return 1;
  if (setup.requested_channels > 0) return setup.requested_channels;
  switch (algorithm) {
    case dc::Algorithm::kRing:
    case dc::Algorithm::kDoubleBinaryTree:
    case dc::Algorithm::kChain:
    case dc::Algorithm::kBinaryTree:
      break;
    default:
      return 1;
  }
  return static_cast<int32_t>(
      std::clamp<int64_t>(bytes / kMinChannelBytes, 1, setup.nic_channels));
}

absl::StatusOr<Plan> PlanSize(const Setup& setup, int64_t bytes) {
  Plan plan;
  plan.algorithm = setup.algorithm;
  const int64_t n = setup.hardware.n;
  int64_t elements = bytes / setup.element_size;
  if (setup.op == SweepOp::kAllGather || setup.op == SweepOp::kReduceScatter ||
      setup.op == SweepOp::kAllToAll) {
    elements -= elements % n;
  }
  plan.bytes = elements * setup.element_size;
  plan.count = setup.op == SweepOp::kAllToAll ? elements / n : elements;
  if (setup.op == SweepOp::kBarrier) plan.count = plan.bytes = 0;
  if (setup.nccl) return plan;  // the NCCL model needs no schedule
  int64_t preferred = 0;
  if (setup.op == SweepOp::kAllReduce) {
    std::optional<dc::Algorithm> forced;
    if (!setup.is_auto) forced = setup.algorithm;
    ASSIGN_OR_RETURN(dc::AllReduceSelection selection,
                     dc::SelectAllReduce(plan.bytes, setup.costs, forced));
    plan.algorithm = selection.algorithm;
    preferred = selection.chunk_bytes / setup.element_size;
  } else if (setup.op == SweepOp::kBroadcast || setup.op == SweepOp::kReduce) {
    preferred = std::max<int64_t>(
        1, (elements + kPipelinePieces - 1) / kPipelinePieces);
  } else if (setup.is_auto && (setup.op == SweepOp::kReduceScatter ||
                               setup.op == SweepOp::kAllGather)) {
    ASSIGN_OR_RETURN(dc::Algorithm chosen,
                     dc::SelectShardedCollective(ScheduleOp(setup.op),
                                                 plan.bytes, setup.costs));
    plan.algorithm = chosen;
  }
  plan.label = std::string(dc::AlgorithmName(plan.algorithm));
  if (setup.is_auto) plan.label = absl::StrCat("auto:", plan.label);
  plan.channels = ChannelsFor(setup, plan.algorithm, plan.bytes);
  ASSIGN_OR_RETURN(int64_t chunk, BudgetedChunk(setup, plan, preferred));
  plan.chunk_elements = chunk;
  return plan;
}

// One rank's part: shape-only tensors, then the collective.
absl::Status RunRank(const Setup& setup, const Plan& plan, int rank,
                     devices::Device& device, dc::ScheduleCommunicator& comm) {
  const int64_t n = setup.hardware.n;
  devices::CollectiveOptions options;
  options.timeout = kCollectiveTimeout;
  auto tensor = [&](int64_t count) {
    return device.Allocate(setup.dtype, devices::Shape({count}));
  };
  const int64_t shard = plan.count / n;
  int64_t in_count = plan.count, out_count = plan.count;
  if (setup.op == SweepOp::kAllGather) in_count = shard;
  if (setup.op == SweepOp::kReduceScatter) out_count = shard;
  if (setup.op == SweepOp::kAllToAll) in_count = out_count = plan.count * n;
  if (setup.op == SweepOp::kBarrier) {
    return comm.Barrier(rank, kCollectiveTimeout);
  }
  ASSIGN_OR_RETURN(devices::Tensor in, tensor(in_count));
  if (setup.op == SweepOp::kBroadcast)
    return comm.Broadcast(rank, 0, in, options);
  ASSIGN_OR_RETURN(devices::Tensor out, tensor(out_count));
  switch (setup.op) {
    case SweepOp::kAllReduce:
      return comm.AllReduce(rank, in, out, options);
    case SweepOp::kAllGather:
      return comm.AllGather(rank, in, out, options);
    case SweepOp::kReduceScatter:
      return comm.ReduceScatter(rank, in, out, options);
    case SweepOp::kReduce:
      return comm.Reduce(rank, 0, in, out, options);
    case SweepOp::kAllToAll:
      return comm.AllToAll(rank, in, out, options);
    default:
      return absl::InternalError("unexpected collective");
  }
}

// The communicator options a size runs with (the threaded simulation
// gives them to its ScheduleCommunicator; the replay plans with them).
dc::ScheduleCommunicatorOptions CommunicatorOptions(const Setup& setup,
                                                    const Plan& plan) {
  dc::ScheduleCommunicatorOptions options;
  options.name = "distsim-collective";
  options.costs = setup.costs;
  // No chunking is asked for with pieces as large as the whole buffer (a
  // chunk size of 0 would let the communicator chunk as its cost model
  // likes, past the message budget).
  options.chunk_bytes = plan.chunk_elements > 0
                            ? plan.chunk_elements * setup.element_size
                            : std::max<int64_t>(plan.bytes, setup.element_size);
  options.all_reduce_algorithm = plan.algorithm;
  options.num_channels = plan.channels;
  options.hierarchy_dims = setup.dims;
  if (setup.op == SweepOp::kBroadcast)
    options.broadcast_algorithm = plan.algorithm;
  if (setup.op == SweepOp::kReduce) options.reduce_algorithm = plan.algorithm;
  if (setup.op == SweepOp::kReduceScatter) {
    options.reduce_scatter_algorithm = plan.algorithm;
  }
  if (setup.op == SweepOp::kAllGather) {
    options.all_gather_algorithm = plan.algorithm;
  }
  return options;
}

// Simulated microseconds of one collective on a fresh platform, replaying
// its schedule as one state machine per rank (schedule_replay.h).
absl::StatusOr<double> Replay(const Setup& setup, const Plan& plan, bool trace,
                              int64_t* events, int64_t* rank_classes) {
  ASSIGN_OR_RETURN(
      std::unique_ptr<simulator::SimPlatform> platform,
      simulator::SimPlatform::FromSpec(
          trace ? setup.spec : absl::StrCat(setup.spec, ";notrace")));
  const int64_t n = setup.hardware.n;
  // The count each rank's call passes (see dc::PlanCall).
  int64_t count = plan.count;
  int64_t element_size = setup.element_size;
  if (setup.op == SweepOp::kAllToAll) count = plan.count * n;
  if (setup.op == SweepOp::kBarrier) {
    count = 0;
    element_size = 1;
  }
  ASSIGN_OR_RETURN(
      dc::PlannedCall call,
      dc::PlanCall(CommunicatorOptions(setup, plan), static_cast<int>(n),
                   ScheduleOp(setup.op), count,
                   static_cast<size_t>(element_size), /*root=*/0));
  if (call.selection.has_value() &&
      call.selection->algorithm != plan.algorithm) {
    return absl::InternalError(absl::StrCat(
        "the communicator would run a different all-reduce than planned (",
        plan.label, ")"));
  }
  ASSIGN_OR_RETURN(
      dc::Schedule schedule,
      dc::BuildSchedule(ScheduleOp(setup.op), call.algorithm, call.schedule));
  ScheduleReplayOptions replay_options;
  replay_options.use_symmetry = setup.symmetry;
  absl::StatusOr<ScheduleReplayResult> replayed = ReplaySchedule(
      *platform, setup.device_indices, schedule, element_size, replay_options);
  if (!replayed.ok()) {
    return absl::Status(
        replayed.status().code(),
        absl::StrCat(SweepOpName(setup.op), " of ", plan.bytes, " bytes with ",
                     plan.label, ": ", replayed.status().message()));
  }
  if (trace && !setup.trace_path.empty()) {
    RETURN_IF_ERROR(platform->WriteTrace(setup.trace_path));
  }
  *events = platform->EventsProcessed() + replayed->class_events;
  *rank_classes = replayed->rank_classes;
  return static_cast<double>(replayed->elapsed) / 1e6;
}

// Simulated microseconds of one collective on a fresh platform, every rank
// on a host thread of its own calling a ScheduleCommunicator, as
// strategies run.
absl::StatusOr<double> Simulate(const Setup& setup, const Plan& plan,
                                bool trace, int64_t* events) {
  ASSIGN_OR_RETURN(
      std::unique_ptr<simulator::SimPlatform> platform,
      simulator::SimPlatform::FromSpec(
          trace ? setup.spec : absl::StrCat(setup.spec, ";notrace")));
  simulator::SimPlatform& p = *platform;
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<devices::Transport>> endpoints,
                   p.CreateTransportGroup(setup.device_names));
  dc::ScheduleCommunicatorOptions options = CommunicatorOptions(setup, plan);
  ASSIGN_OR_RETURN(
      std::unique_ptr<dc::ScheduleCommunicator> comm,
      dc::ScheduleCommunicator::Create(std::move(endpoints), options));
  std::vector<devices::Device*> devices;
  for (const std::string& name : setup.device_names) {
    ASSIGN_OR_RETURN(devices::Device * d, p.FindDevice(name));
    devices.push_back(d);
  }
  const size_t n = devices.size();
  std::vector<absl::Status> status(n);
  std::vector<simulator::SimTime> start(n), end(n);
  distribute::internal::RunBoundThreads(devices, [&](int rank) {
    start[rank] = p.now();
    status[rank] = RunRank(setup, plan, rank, *devices[rank], *comm);
    end[rank] = p.now();
  });
  for (size_t r = 0; r < n; ++r) {
    if (!status[r].ok()) {
      return absl::Status(
          status[r].code(),
          absl::StrCat(SweepOpName(setup.op), " of ", plan.bytes,
                       " bytes with ", plan.label, ", rank ", r, ": ",
                       status[r].message()));
    }
  }
  if (setup.op == SweepOp::kAllReduce) {
    std::optional<dc::AllReduceSelection> ran = comm->LastAllReduceSelection(0);
    if (!ran.has_value() || ran->algorithm != plan.algorithm) {
      return absl::InternalError(absl::StrCat(
          "the communicator ran a different all-reduce than planned (",
          plan.label, ")"));
    }
  }
  if (trace && !setup.trace_path.empty()) {
    RETURN_IF_ERROR(p.WriteTrace(setup.trace_path));
  }
  *events = p.EventsProcessed();
  const simulator::SimTime elapsed =
      *std::max_element(end.begin(), end.end()) -
      *std::min_element(start.begin(), start.end());
  return static_cast<double>(elapsed) / 1e6;
}

absl::StatusOr<simulator::NcclOp> NcclOpOf(SweepOp op) {
  return simulator::NcclOpFromName(SweepOpName(op));
}

absl::StatusOr<Setup> MakeSetup(const SweepOptions& options) {
  Setup setup;
  ASSIGN_OR_RETURN(SweepOp op, SweepOpFromName(options.op));
  setup.op = op;
  RETURN_IF_ERROR(ResolveAlgorithm(options.algorithm, setup));
  ASSIGN_OR_RETURN(devices::DType dtype, devices::ParseDType(options.dtype));
  setup.dtype = dtype;
  setup.element_size = static_cast<int64_t>(devices::DTypeSize(dtype));
  if (options.min_bytes < 1 || options.max_bytes < options.min_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sizes from ", options.min_bytes, " to ", options.max_bytes,
        " bytes: need 1 <= --min_bytes <= --max_bytes"));
  }
  if (options.step_factor < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--step_factor=", options.step_factor,
                     ": sizes must grow; use a factor of at least 2"));
  }
  if (options.message_budget < 1) {
    return absl::InvalidArgumentError("the message budget must be positive");
  }
  if (setup.nccl && !options.trace_path.empty()) {
    return absl::InvalidArgumentError(
        "--trace needs a simulated algorithm; the nccl rows come from an "
        "analytical model, not a simulation");
  }
  if (options.gpus_per_node < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpus_per_node=", options.gpus_per_node,
                     ": give 0 (fill each node) or the ranks per node"));
  }
  setup.nccl_options = options.nccl;
  RETURN_IF_ERROR(simulator::ValidateNcclRunOptions(setup.nccl_options));
  setup.message_budget = options.message_budget;
  setup.trace_path = options.trace_path;
  setup.spec = absl::StrCat("sim:", options.topology, ";timing");
  // The topology, in a platform for the schedule algorithms (for the names
  // of the devices; sizes get fresh platforms), alone for the NCCL model,
  // which needs no simulation (and a platform of 131,072 GPUs takes a while
  // to build).
  std::unique_ptr<simulator::SimPlatform> platform;
  std::optional<simulator::Topology> loaded;
  if (setup.nccl) {
    ASSIGN_OR_RETURN(simulator::SimPlatformSpec spec,
                     simulator::ParseSimPlatformSpec(setup.spec));
    ASSIGN_OR_RETURN(simulator::Topology t,
                     simulator::LoadSimTopology(spec.topology));
    loaded = std::move(t);
  } else {
    ASSIGN_OR_RETURN(
        std::unique_ptr<simulator::SimPlatform> p,
        simulator::SimPlatform::FromSpec(absl::StrCat(setup.spec, ";notrace")));
    platform = std::move(p);
  }
  const simulator::Topology& topology =
      platform != nullptr ? platform->topology() : *loaded;
  int64_t group_size = options.gpus;
  if (options.gpus_per_node > 0 && group_size == 0) {
    // --gpus_per_node alone: every node that has that many GPUs.
    std::vector<int64_t> per_host(topology.host_names().size());
    for (const simulator::DeviceInfo& d : topology.devices()) {
      if (d.kind == simulator::DeviceDef::GPU && d.host >= 0)
        ++per_host[d.host];
    }
    for (int64_t count : per_host) {
      if (count >= options.gpus_per_node) group_size += options.gpus_per_node;
    }
    group_size = std::max<int64_t>(group_size, 1);
  }
  absl::StatusOr<std::vector<int>> chosen =
      options.gpus_per_node > 0
          ? simulator::PlaceGpuRanks(topology, group_size,
                                     options.gpus_per_node)
          : PickDevices(topology, options.gpus);
  if (!chosen.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpus=", options.gpus, " --gpus_per_node=", options.gpus_per_node,
        ": ", chosen.status().message()));
  }
  // A whole TPU slice: ranks in torus order, and the torus as the grid of
  // the hierarchical algorithms (rings along each axis, as TPUs run their
  // collectives over ICI).
  std::vector<int32_t> torus;
  if (options.gpus_per_node == 0) torus = TorusOrder(topology, *chosen);
  setup.device_indices = *chosen;
  setup.rank_threads = options.rank_threads;
  setup.symmetry = options.symmetry;
  if (platform != nullptr) {
    const std::vector<std::string> names = platform->DeviceNames();
    for (int index : *chosen) setup.device_names.push_back(names[index]);
  }
  ASSIGN_OR_RETURN(simulator::GroupHardware hw,
                   simulator::DescribeGroupHardware(topology, *chosen));
  setup.hardware = std::move(hw);
  setup.costs = GroupCostsOf(setup.hardware);
  if (!torus.empty()) {
    // One ICI network: rings along an axis use neighbour links, and
    // traffic between distant chips shares the torus's bisection.
    setup.costs.grid = std::move(torus);
    setup.costs.ranks_per_node = 0;
    setup.costs.inter_bw_Bps = setup.costs.intra_bw_Bps;
    setup.costs.inter_latency_us = setup.costs.intra_latency_us;
    setup.costs.bisection_fraction =
        TorusBisectionFraction(*topology.mesh(), setup.hardware.n);
  }
  const bool splits = Splits(setup.op);
  if (options.channels < 0 || options.channels > kMaxChannels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--channels=", options.channels, ": give 1 to ", kMaxChannels,
        ", or 0 for one per NIC of a node as NCCL runs"));
  }
  if (options.channels > 1 && !splits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--channels=", options.channels, ": ", options.op,
        " runs on one channel; channels split all_reduce, broadcast and "
        "reduce"));
  }
  setup.requested_channels = static_cast<int32_t>(options.channels);
  if (!options.dims.empty()) {
    int64_t product = 1;
    for (int32_t d : options.dims) product *= std::max(d, 0);
    if (product != setup.hardware.n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dims=", absl::StrJoin(options.dims, ","), " hold ", product,
          " ranks; the group has ", setup.hardware.n,
          " (give sizes whose product is the number of GPUs, the first "
          "dimension fastest, e.g. GPUs per node first)"));
    }
    const bool grid_op = setup.op == SweepOp::kAllReduce ||
                         setup.op == SweepOp::kReduceScatter ||
                         setup.op == SweepOp::kAllGather;
    if (!grid_op ||
        !(setup.is_auto || setup.algorithm == dc::Algorithm::kHierarchical)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dims=", absl::StrJoin(options.dims, ","),
          " shapes the hierarchical algorithms; use it with --op=all_reduce, "
          "reduce_scatter or all_gather and --algorithm=hierarchical or "
          "auto"));
    }
    setup.dims = options.dims;
  }
  setup.nic_channels = DefaultChannels(setup.hardware);
  return setup;
}

}  // namespace

simulator::NcclRunOptions NcclTestsRunOptions() {
  simulator::NcclRunOptions o;
  o.gpus_per_thread = 1;
  o.iters = 20;
  o.warmup_iters = 5;
  return o;
}

bool SweepRow::operator==(const SweepRow& other) const {
  return op == other.op && bytes == other.bytes && count == other.count &&
         dtype == other.dtype && algorithm == other.algorithm &&
         time_us == other.time_us && algbw == other.algbw &&
         busbw == other.busbw;
}

absl::StatusOr<SweepResult> RunCollectiveSweep(const SweepOptions& options,
                                               const SweepRowCallback& on_row) {
  ASSIGN_OR_RETURN(Setup setup, MakeSetup(options));
  const int n = setup.hardware.n;
  SweepResult result;
  result.platform = setup.spec;
  result.ranks = n;
  result.hardware = setup.hardware.DebugString();

  std::vector<int64_t> sizes;
  if (setup.op == SweepOp::kBarrier) {
    sizes.push_back(0);
  } else {
    const int64_t last = std::min(options.max_bytes, kMaxBytes);
    for (int64_t b = options.min_bytes; b <= last;) {
      sizes.push_back(b);
      if (b > last / options.step_factor) break;
      b *= options.step_factor;
    }
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSIGN_OR_RETURN(Plan plan, PlanSize(setup, sizes[i]));
    if (setup.op != SweepOp::kBarrier && plan.count == 0) continue;
    SweepRow row;
    row.op = std::string(SweepOpName(setup.op));
    row.bytes = plan.bytes;
    row.count = plan.count;
    if (setup.op == SweepOp::kAllGather ||
        setup.op == SweepOp::kReduceScatter) {
      row.count = plan.count / n;  // per rank, as nccl-tests counts
    }
    row.dtype = std::string(devices::DTypeName(setup.dtype));
    if (setup.nccl) {
      ASSIGN_OR_RETURN(simulator::NcclOp op, NcclOpOf(setup.op));
      ASSIGN_OR_RETURN(simulator::NcclPrediction p,
                       simulator::PredictNcclOn(setup.hardware, op, plan.bytes,
                                                setup.nccl_options));
      row.algorithm = absl::StrCat("nccl:", p.Label());
      row.time_us = p.time_us;
    } else {
      const bool trace = i + 1 == sizes.size() && !setup.trace_path.empty();
      ASSIGN_OR_RETURN(
          double us,
          setup.rank_threads
              ? Simulate(setup, plan, trace, &row.events)
              : Replay(setup, plan, trace, &row.events, &row.rank_classes));
      row.algorithm = plan.label;
      row.time_us = us;
    }
    if (row.time_us > 0) {
      row.algbw = static_cast<double>(row.bytes) / (row.time_us * 1e3);
    }
    row.busbw = row.algbw * BusBandwidthFactor(setup.op, n);
    result.rows.push_back(std::move(row));
    if (on_row) on_row(result, result.rows.back());
  }
  return result;
}

}  // namespace distsim
