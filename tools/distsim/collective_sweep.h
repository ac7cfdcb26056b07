// The core of `distsim collective`: a sweep of one collective over message
// sizes on a simulated topology, one row per size in the manner of
// nccl-tests (size, count, type, time, algbw, busbw), plus the algorithm
// that ran.
//
// Rows of schedule algorithms (auto, ring, tree, rhd, direct, hierarchical,
// chain, binary_tree, pairwise, dissemination) are measured by running the
// schedules through the simulator in timing-only mode on a fresh
// "sim:<topology>;timing" platform per size: the schedule a
// distribute::collective::ScheduleCommunicator would run
// (distribute::collective::PlanCall) is replayed as one state machine per
// rank (schedule_replay.h), which makes the same network calls as ranks on
// bound threads calling the communicator (SweepOptions::rank_threads, the
// same times, far slower); the row's time runs from the start to the end of
// the last rank. Rows of `nccl` come from the analytical NCCL model
// (simulator/nccl_model.h) and are labelled "nccl:<algorithm>/<protocol>".
//
// Chunking: all-reduce rows use the chunk size the cost model
// (distribute/collective/cost_model.h) picks for the algorithm; broadcast and
// reduce are pipelined in kPipelinePieces pieces; the other collectives are
// not chunked. Where that would send more than `message_budget` messages in
// one collective, chunks grow until it does not (or, where even whole
// ranges send more, each range goes as one message), which keeps a sweep
// to 8 GiB on 128 GPUs under a second.
//
// Example:
//   SweepOptions options;
//   options.topology = "dgx_h100";
//   options.min_bytes = 8;
//   options.max_bytes = int64_t{1} << 30;
//   absl::StatusOr<SweepResult> result = RunCollectiveSweep(options);
//   std::cout << FormatSweepTable(*result);     // or
//   SweepRowsToJson(result->rows)
#ifndef TOOLS_DISTSIM_COLLECTIVE_SWEEP_H_
#define TOOLS_DISTSIM_COLLECTIVE_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/nccl_model.h"

namespace distsim {

enum class SweepOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kBarrier,
};

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
// "all_to_all", "barrier".
absl::string_view SweepOpName(SweepOp op);
// The inverse; INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<SweepOp> SweepOpFromName(absl::string_view name);

// nccl-tests' factor from algorithm to bus bandwidth for `n` ranks:
// all-reduce 2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n;
// broadcast and reduce 1; barrier 0.
double BusBandwidthFactor(SweepOp op, int n);

// "8", "64K", "1M", "8G" (K, M, G: powers of 1024, either case) -> bytes.
// INVALID_ARGUMENT for anything else, for sizes below 1 and above 2^62.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

// Broadcast and reduce are split into this many pieces per message.
inline constexpr int64_t kPipelinePieces = 16;
// Default cap on the messages (sends, over all ranks) of one collective.
inline constexpr int64_t kDefaultMessageBudget = 16384;

// simulator::NcclRunOptions with nccl-tests' defaults: -g 1, -n 20, -w 5.
simulator::NcclRunOptions NcclTestsRunOptions();

struct SweepOptions {
  // A built-in topology (e.g. "dgx_h100", "dgx_h100_cluster:16") or the path
  // of a topology file.
  std::string topology = "dgx_h100";
  std::string op = "all_reduce";
  // "auto", a schedule algorithm that implements `op`, or "nccl".
  std::string algorithm = "auto";
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{8} << 30;
  int64_t step_factor = 2;
  // The first `gpus` GPUs of the topology (0: all). Topologies without GPUs
  // use their TPU cores, then their CPUs.
  int64_t gpus = 0;
  std::string dtype = "float32";
  // Where to write the Chrome trace of the largest size ("": none).
  std::string trace_path;
  int64_t message_budget = kDefaultMessageBudget;
  // Ranks per node (0: fill each node's GPUs in order).
  int64_t gpus_per_node = 0;
  // Channels of the schedule algorithms' all-reduce, broadcast and reduce
  // (dc::ScheduleOptions::num_channels); 0: as NCCL, one per NIC of a node
  // when the group spans nodes, else 1. Other ops and nccl rows: 0 or 1.
  int64_t channels = 0;
  // The hierarchical all-reduce's grid, first dimension fastest (e.g.
  // {8, 32, 64}: GPUs of a node, nodes of a pod, pods); product = ranks.
  // Empty: {ranks per node, nodes}.
  std::vector<int32_t> dims;
  // How the NCCL model's collectives are launched and timed, and which of
  // NCCL's algorithms and protocols it may pick (nccl rows only). Defaults
  // as nccl-tests: one process per GPU, -n 20, -w 5.
  simulator::NcclRunOptions nccl = NcclTestsRunOptions();
  // Schedule algorithms: run every simulated rank on a host thread of its
  // own calling a ScheduleCommunicator, as strategies run, instead of
  // replaying the schedule as one state machine per rank. The same times
  // (tests compare the two), far slower on large groups.
  bool rank_threads = false;
  // Schedule algorithms, replayed: simulate one rank per class of
  // equivalent ranks where the schedule and network are symmetric
  // (symmetric_replay.h; never with a trace); false: every rank.
  bool symmetry = true;
};

// One size, as nccl-tests reports it. Bandwidths in GB/s (1e9 bytes per
// second): algbw = bytes / time, busbw = algbw * BusBandwidthFactor.
struct SweepRow {
  std::string op;
  // The buffer of an all-reduce, broadcast or reduce; the gathered output
  // of an all-gather and the input of a reduce-scatter; each rank's buffer
  // of an all-to-all.
  int64_t bytes = 0;
  // Elements: bytes / element size, except each rank's share (divided by
  // the ranks) for all-gather, reduce-scatter and all-to-all.
  int64_t count = 0;
  std::string dtype;
  // "auto:ring", "ring", "nccl:nvls/simple", ...
  std::string algorithm;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  // Engine events the simulation of this size ran (0 for nccl rows, which
  // come from the analytical model): how much work the row took.
  int64_t events = 0;
  // Schedule rows replayed by symmetry: the classes of equivalent ranks
  // simulated, a rank each (0: every rank was simulated).
  int64_t rank_classes = 0;

  // Compares everything but `events` and `rank_classes`.
  bool operator==(const SweepRow& other) const;
};

struct SweepResult {
  std::string platform;  // e.g. "sim:dgx_h100;timing"
  int ranks = 0;
  std::string hardware;  // simulator::GroupHardware::DebugString()
  std::vector<SweepRow> rows;
};

// Runs the sweep. Sizes go from min_bytes, multiplied by step_factor, up to
// max_bytes; each is rounded down to whole elements (and, for all-gather,
// reduce-scatter and all-to-all, to a multiple of the ranks), and sizes that
// round to nothing are left out. A barrier has one row of 0 bytes.
// INVALID_ARGUMENT for bad options (unknown op, algorithm or dtype, an
// algorithm that does not implement the op, min > max, step_factor < 2,
// --trace with nccl, more GPUs than the topology has); the errors of
// loading the topology (NOT_FOUND for an unknown built-in or file), of the
// cost model (FAILED_PRECONDITION for hierarchical on groups that are not
// whole nodes), of the NCCL model and of the simulation.
//
// `on_row`, when given, is called with each row as soon as it is computed
// (rows of large groups take seconds each), with the result so far (the
// header fields set, `rows` ending in that row).
using SweepRowCallback =
    std::function<void(const SweepResult& so_far, const SweepRow& row)>;
absl::StatusOr<SweepResult> RunCollectiveSweep(
    const SweepOptions& options, const SweepRowCallback& on_row = {});

// nccl-tests' table, in its columns: size, count, type (nccl-tests' names:
// float, half, bfloat16, ...), redop, root, then time, algbw, busbw and
// #wrong out of place and in place (the same simulated collective; #wrong
// N/A, as nccl-tests -c 0 prints), then the algorithm that ran; the
// header's comment lines first, and nccl-tests' footer ("# Out of bounds
// values", "# Avg bus bandwidth") last.
std::string FormatSweepTable(const SweepResult& result);
// The table's parts: its header (for `op`), one row's line, the footer.
std::string FormatSweepHeader(const SweepResult& result, absl::string_view op);
std::string FormatSweepRow(const SweepRow& row);
std::string FormatSweepFooter(const SweepResult& result);

// One JSON array of {"op","bytes","count","dtype","algorithm","time_us",
// "algbw","busbw"} objects, ending in a newline.
std::string SweepRowsToJson(const std::vector<SweepRow>& rows);

// CSV: "op,bytes,count,dtype,time_us,algbw,busbw,algorithm" and one line
// per row with the same fields (numbers as JSON writes them).
std::string SweepCsvHeader();
std::string SweepRowToCsv(const SweepRow& row);

}  // namespace distsim

#endif  // TOOLS_DISTSIM_COLLECTIVE_SWEEP_H_
