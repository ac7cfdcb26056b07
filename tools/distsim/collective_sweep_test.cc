// The sweep behind `distsim collective`: rows of a small sweep on a DGX H100,
// nccl-tests' bus bandwidth factors, the JSON and table shapes, a ring
// all-reduce that reaches the topology's NVLink bandwidth, NCCL rows,
// determinism, and the errors of bad options.
#include "tools/distsim/collective_sweep.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace distsim {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

SweepResult Sweep(const SweepOptions& options) {
  absl::StatusOr<SweepResult> result = RunCollectiveSweep(options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *std::move(result) : SweepResult{};
}

TEST(CollectiveSweepTest, SmallAutoSweepOnDgxH100) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.min_bytes = 8;
  options.max_bytes = 64 << 20;
  options.step_factor = 8;
  const SweepResult result = Sweep(options);
  EXPECT_EQ(result.platform, "sim:dgx_h100;timing");
  EXPECT_EQ(result.ranks, 8);
  ASSERT_EQ(result.rows.size(), 8u);  // 8 B, 64 B, ..., 16 MiB
  int64_t bytes = 8;
  double previous_us = 0;
  for (const SweepRow& row : result.rows) {
    SCOPED_TRACE(row.bytes);
    EXPECT_EQ(row.op, "all_reduce");
    EXPECT_EQ(row.bytes, bytes);
    EXPECT_EQ(row.count, bytes / 4);
    EXPECT_EQ(row.dtype, "float32");
    EXPECT_TRUE(absl::StartsWith(row.algorithm, "auto:")) << row.algorithm;
    EXPECT_GT(row.time_us, 0);
    EXPECT_GE(row.time_us, previous_us);
    EXPECT_DOUBLE_EQ(row.algbw,
                     static_cast<double>(bytes) / (row.time_us * 1e3));
    EXPECT_DOUBLE_EQ(row.busbw, row.algbw * 2 * 7 / 8);
    previous_us = row.time_us;
    bytes *= 8;
  }
  // Small messages cost about the route latency, large ones approach the
  // links: the cost model sends tiny ones directly.
  EXPECT_EQ(result.rows.front().algorithm, "auto:direct");
  EXPECT_LT(result.rows.front().time_us, 5.0);
  EXPECT_GT(result.rows.back().busbw, 300.0);
}

TEST(CollectiveSweepTest, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kAllToAll, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kBarrier, 8), 0.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(SweepOp::kAllReduce, 1), 0.0);
}

TEST(CollectiveSweepTest, RingAllReduceReachesTheNvlinkBandwidth) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.algorithm = "ring";
  options.min_bytes = options.max_bytes = kGiB;
  const SweepResult result = Sweep(options);
  ASSERT_EQ(result.rows.size(), 1u);
  EXPECT_EQ(result.rows[0].algorithm, "ring");
  // dgx_h100.textproto gives every GPU 18 NVLinks of 25 GB/s to the
  // NVSwitch: 450 GB/s. The ring's bus bandwidth is that, less 14 route
  // latencies of 0.5 us against about 4.2 ms: within 1%.
  EXPECT_NEAR(result.rows[0].busbw, 450.0, 4.5);
  EXPECT_LE(result.rows[0].busbw, 450.0);
}

TEST(CollectiveSweepTest, SameSweepTwiceGivesIdenticalRows) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.algorithm = "tree";
  options.min_bytes = 1024;
  options.max_bytes = 64 << 20;
  options.step_factor = 16;
  const SweepResult first = Sweep(options);
  const SweepResult second = Sweep(options);
  ASSERT_EQ(first.rows.size(), 5u);
  EXPECT_TRUE(first.rows == second.rows);
  EXPECT_EQ(SweepRowsToJson(first.rows), SweepRowsToJson(second.rows));
}

// A row of 1 KiB of float32 in 12.5 us by `algorithm`.
SweepRow SampleRow(const std::string& algorithm) {
  SweepRow row;
  row.op = "all_reduce";
  row.bytes = 1024;
  row.count = 256;
  row.dtype = "float32";
  row.algorithm = algorithm;
  row.time_us = 12.5;
  row.algbw = 0.08192;
  row.busbw = 0.14336;
  return row;
}

TEST(CollectiveSweepTest, JsonIsOneArrayOfRows) {
  const SweepRow row = SampleRow("nccl:ring/ll");
  EXPECT_EQ(SweepRowsToJson({row, row}),
            "[{\"op\":\"all_reduce\",\"bytes\":1024,\"count\":256,"
            "\"dtype\":\"float32\",\"algorithm\":\"nccl:ring/ll\","
            "\"time_us\":12.5,\"algbw\":0.08192,\"busbw\":0.14336},"
            "{\"op\":\"all_reduce\",\"bytes\":1024,\"count\":256,"
            "\"dtype\":\"float32\",\"algorithm\":\"nccl:ring/ll\","
            "\"time_us\":12.5,\"algbw\":0.08192,\"busbw\":0.14336}]\n");
  EXPECT_EQ(SweepRowsToJson({}), "[]\n");

  SweepOptions options;
  options.topology = "dgx_a100";
  options.algorithm = "nccl";
  options.max_bytes = 1 << 20;
  const SweepResult result = Sweep(options);
  const std::string json = SweepRowsToJson(result.rows);
  EXPECT_TRUE(absl::StartsWith(json, "[{\"op\":\"all_reduce\",\"bytes\":8,"));
  EXPECT_TRUE(absl::EndsWith(json, "}]\n"));
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(json, "{\"op\"")).size(),
            result.rows.size() + 1);
}

TEST(CollectiveSweepTest, CsvHasAHeaderAndALinePerRow) {
  const SweepRow row = SampleRow("auto:ring");
  EXPECT_EQ(SweepCsvHeader(),
            "op,bytes,count,dtype,time_us,algbw,busbw,algorithm\n");
  EXPECT_EQ(SweepRowToCsv(row),
            "all_reduce,1024,256,float32,12.5,0.08192,0.14336,auto:ring\n");
}

TEST(CollectiveSweepTest, TableHasNcclTestsColumns) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.algorithm = "nccl";
  options.min_bytes = 8;
  options.max_bytes = 16;
  const SweepResult result = Sweep(options);
  const std::vector<std::string> lines =
      absl::StrSplit(FormatSweepTable(result), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_TRUE(
      absl::StartsWith(lines[0], "# all_reduce on sim:dgx_h100;timing"));
  EXPECT_TRUE(absl::StrContains(lines[2], "out-of-place"));
  EXPECT_TRUE(absl::StrContains(lines[2], "in-place"));
  EXPECT_TRUE(absl::StrContains(lines[3], "redop"));
  EXPECT_TRUE(absl::StrContains(lines[3], "#wrong"));
  EXPECT_TRUE(absl::StrContains(lines[4], "(GB/s)"));
  // The columns nccl-tests parsers read, by position.
  const std::vector<std::string> cols =
      absl::StrSplit(lines[5], ' ', absl::SkipEmpty());
  ASSERT_EQ(cols.size(), 14u) << lines[5];
  EXPECT_EQ(cols[0], "8");
  EXPECT_EQ(cols[1], "2");
  EXPECT_EQ(cols[2], "float");
  EXPECT_EQ(cols[3], "sum");
  EXPECT_EQ(cols[4], "-1");
  EXPECT_EQ(cols[5], cols[9]);   // time, out of place and in place
  EXPECT_EQ(cols[7], cols[11]);  // busbw
  EXPECT_EQ(cols[8], "N/A");
  EXPECT_EQ(cols[13], "nccl:ring/ll");
  EXPECT_EQ(lines[7], "# Out of bounds values : 0 OK");
  EXPECT_TRUE(absl::StartsWith(lines[8], "# Avg bus bandwidth    : "))
      << lines[8];
}

TEST(CollectiveSweepTest, NcclRowsNameTheChoice) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.algorithm = "nccl";
  options.min_bytes = 8;
  options.max_bytes = kGiB;
  options.step_factor = kGiB / 8;
  const SweepResult result = Sweep(options);
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_EQ(result.rows[0].algorithm, "nccl:ring/ll");
  EXPECT_EQ(result.rows[1].algorithm, "nccl:nvls/simple");
  EXPECT_GT(result.rows[1].busbw, 460.0);
}

TEST(CollectiveSweepTest, OtherCollectivesRoundTheirCounts) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.gpus = 4;
  options.min_bytes = 8;
  options.max_bytes = 64;
  for (const std::string op : {"all_gather", "reduce_scatter", "all_to_all"}) {
    SCOPED_TRACE(op);
    options.op = op;
    const SweepResult result = Sweep(options);
    // 8 B is two float32s: no whole element per rank of 4.
    ASSERT_EQ(result.rows.size(), 3u);
    EXPECT_EQ(result.rows[0].bytes, 16);
    EXPECT_EQ(result.rows[0].count, 1);
    EXPECT_EQ(result.rows[2].bytes, 64);
    EXPECT_EQ(result.rows[2].count, 4);
    EXPECT_DOUBLE_EQ(result.rows[2].busbw, result.rows[2].algbw * 0.75);
  }
  for (const std::string op : {"broadcast", "reduce"}) {
    for (const std::string algorithm :
         {"auto", "chain", "binary_tree", "nccl"}) {
      SCOPED_TRACE(op + " " + algorithm);
      options.op = op;
      options.algorithm = algorithm;
      options.max_bytes = 1 << 20;
      const SweepResult result = Sweep(options);
      ASSERT_FALSE(result.rows.empty());
      EXPECT_DOUBLE_EQ(result.rows.back().busbw, result.rows.back().algbw);
      if (algorithm == "auto") {
        EXPECT_EQ(result.rows.back().algorithm, "auto:binary_tree");
      }
    }
  }
}

TEST(CollectiveSweepTest, BarrierIsOneRow) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.op = "barrier";
  const SweepResult result = Sweep(options);
  ASSERT_EQ(result.rows.size(), 1u);
  EXPECT_EQ(result.rows[0].bytes, 0);
  EXPECT_EQ(result.rows[0].algorithm, "auto:dissemination");
  // Three rounds of a 0.5 us route.
  EXPECT_NEAR(result.rows[0].time_us, 1.5, 1e-9);
  EXPECT_EQ(result.rows[0].busbw, 0);
}

TEST(CollectiveSweepTest, TraceOfTheLargestSize) {
  const std::string path =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
      "/collective_trace.json";
  std::remove(path.c_str());
  SweepOptions options;
  options.topology = "pcie_4gpu";
  options.algorithm = "ring";
  options.min_bytes = 1024;
  options.max_bytes = 4096;
  options.trace_path = path;
  Sweep(options);
  std::ifstream in(path);
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(absl::StrContains(text.str(), "traceEvents"));
  // The largest size's messages: 1 KiB shards of the 4 KiB ring.
  EXPECT_TRUE(absl::StrContains(text.str(), "gpu0->pcie_switch"));
}

TEST(CollectiveSweepTest, SmallBudgetsGrowTheChunks) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.op = "broadcast";
  options.algorithm = "chain";
  options.min_bytes = options.max_bytes = 64 << 20;
  // 7 messages unchunked; 16 pieces would send 112.
  options.message_budget = 64;
  const SweepResult tight = Sweep(options);
  options.message_budget = kDefaultMessageBudget;
  const SweepResult loose = Sweep(options);
  ASSERT_EQ(tight.rows.size(), 1u);
  ASSERT_EQ(loose.rows.size(), 1u);
  // Fewer, larger pieces pipeline worse down the chain: (7 + C - 1) / C
  // piece times of S / C for C pieces.
  EXPECT_GT(tight.rows[0].time_us, 1.1 * loose.rows[0].time_us);
}

// A budget below the unchunked collective's messages runs it unchunked,
// never chunked as the cost model would chunk it (which pipelines a 1 GiB
// double binary tree and sends thousands of messages).
TEST(CollectiveSweepTest, BudgetsBelowTheUnchunkedMessagesSendWholeRanges) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.algorithm = "tree";
  options.min_bytes = options.max_bytes = int64_t{1} << 30;
  options.message_budget = 1;
  const SweepResult one = Sweep(options);
  options.message_budget = 2;
  const SweepResult two = Sweep(options);
  options.message_budget = kDefaultMessageBudget;
  const SweepResult chunked = Sweep(options);
  ASSERT_EQ(one.rows.size(), 1u);
  ASSERT_EQ(two.rows.size(), 1u);
  ASSERT_EQ(chunked.rows.size(), 1u);
  EXPECT_EQ(one.rows[0].time_us, two.rows[0].time_us);
  // Whole ranges pipeline worse down the trees.
  EXPECT_GT(one.rows[0].time_us, 1.2 * chunked.rows[0].time_us);
}

TEST(CollectiveSweepTest, RowsArriveAsTheyAreComputed) {
  SweepOptions options;
  options.topology = "dgx_h100";
  options.min_bytes = 1024;
  options.max_bytes = 1 << 20;
  options.step_factor = 4;
  std::vector<SweepRow> seen;
  std::string table;
  absl::StatusOr<SweepResult> result = RunCollectiveSweep(
      options, [&](const SweepResult& so_far, const SweepRow& row) {
        // The header is known before the first row; rows end in this one.
        EXPECT_FALSE(so_far.hardware.empty());
        ASSERT_EQ(so_far.rows.size(), seen.size() + 1);
        EXPECT_TRUE(so_far.rows.back() == row);
        if (seen.empty()) table = FormatSweepHeader(so_far, row.op);
        table += FormatSweepRow(row);
        seen.push_back(row);
      });
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(seen.size(), 6u);  // 1K, 4K, ..., 1M
  EXPECT_TRUE(seen == result->rows);
  // Printed a row at a time (and the footer at the end), the table reads
  // as it does whole.
  EXPECT_EQ(table + FormatSweepFooter(*result), FormatSweepTable(*result));
}

// The replay of schedules (one state machine per rank) and the threaded
// simulation (a host thread per rank calling a ScheduleCommunicator) give
// the same times, for every op and algorithm, on one node, across nodes
// and on a TPU slice, and the same trace.
TEST(CollectiveSweepTest, ReplayMatchesRankThreads) {
  struct Case {
    const char* topology;
    const char* op;
    const char* algorithm;
  };
  const Case cases[] = {
      {"dgx_h100_cluster:2", "all_reduce", "auto"},
      {"dgx_h100_cluster:2", "all_reduce", "ring"},
      {"dgx_h100_cluster:2", "all_reduce", "tree"},
      {"dgx_h100_cluster:2", "all_reduce", "rhd"},
      {"dgx_h100_cluster:2", "all_reduce", "direct"},
      {"dgx_h100_cluster:2", "all_reduce", "hierarchical"},
      {"dgx_h100_cluster:2", "all_gather", "auto"},
      {"dgx_h100_cluster:2", "reduce_scatter", "auto"},
      {"dgx_h100_cluster:2", "all_to_all", "auto"},
      {"dgx_h100_cluster:2", "broadcast", "chain"},
      {"dgx_h100_cluster:2", "broadcast", "binary_tree"},
      {"dgx_h100_cluster:2", "reduce", "chain"},
      {"dgx_h100_cluster:2", "reduce", "binary_tree"},
      {"dgx_h100_cluster:2", "barrier", "auto"},
      {"pcie_4gpu", "all_reduce", "auto"},
      {"tpu_v4:2x2x2", "reduce_scatter", "auto"},
      {"tpu_v4:2x2x2", "all_reduce", "auto"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.topology, " ", c.op, " ", c.algorithm));
    SweepOptions options;
    options.topology = c.topology;
    options.op = c.op;
    options.algorithm = c.algorithm;
    options.min_bytes = 1024;
    options.max_bytes = 16 << 20;
    options.step_factor = 32;  // 1 KiB, 32 KiB, 1 MiB
    options.symmetry = false;  // every rank, as the threads run them
    const SweepResult replayed = Sweep(options);
    options.rank_threads = true;
    const SweepResult threaded = Sweep(options);
    ASSERT_FALSE(replayed.rows.empty());
    ASSERT_EQ(replayed.rows.size(), threaded.rows.size());
    for (size_t i = 0; i < replayed.rows.size(); ++i) {
      EXPECT_TRUE(replayed.rows[i] == threaded.rows[i])
          << replayed.rows[i].bytes << " B: " << replayed.rows[i].time_us
          << " us replayed, " << threaded.rows[i].time_us << " us threaded";
      EXPECT_EQ(replayed.rows[i].events, threaded.rows[i].events);
    }
  }
  // The traces of the largest size, byte for byte.
  const std::string path = absl::StrCat(testing::TempDir(), "/replay.json");
  auto trace = [&](bool rank_threads) {
    SweepOptions options;
    options.topology = "dgx_h100_cluster:2";
    options.algorithm = "hierarchical";
    options.min_bytes = options.max_bytes = 1 << 20;
    options.trace_path = path;
    options.rank_threads = rank_threads;
    Sweep(options);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::string replayed = trace(false);
  EXPECT_FALSE(replayed.empty());
  EXPECT_TRUE(replayed == trace(true));
}

// Replaying one rank per class of equivalent ranks gives every row the
// times of the replay of every rank, where the classes hold: rings and
// hierarchical grids on one node, under one leaf, across leaves (D-mod-k
// routing) and on TPU tori, every op. Times agree to rounding (the class
// network adds k flows' rates as k times one rate); the printed digits are
// the same.
TEST(CollectiveSweepTest, SymmetricReplayMatchesEveryRank) {
  struct Case {
    std::string topology;
    std::string op;
    std::string algorithm;
    std::vector<int32_t> dims;
  };
  const std::vector<Case> cases = {
      {"dgx_h100", "all_reduce", "ring", {}},
      {"dgx_h100", "all_gather", "ring", {}},
      {"dgx_h100", "reduce_scatter", "ring", {}},
      {"dgx_h100_cluster:4", "all_reduce", "hierarchical", {}},
      {"dgx_h100_cluster:4", "all_reduce", "ring", {}},
      {"dgx_h100_cluster:4", "all_gather", "hierarchical", {}},
      {"dgx_h100_cluster:4", "reduce_scatter", "hierarchical", {}},
      {"dgx_h100_cluster:64", "all_reduce", "hierarchical", {8, 32, 2}},
      {"dgx_h100_cluster:64", "all_reduce", "hierarchical", {8, 8, 8}},
      {"dgx_a100_cluster:8,fabric=roce", "all_reduce", "hierarchical", {}},
      {"tpu_v4:4x4x4", "all_reduce", "auto", {}},
      {"tpu_v4:4x4x4", "reduce_scatter", "auto", {}},
      {"tpu_v4:4x4x4", "all_gather", "auto", {}},
  };
  int by_symmetry = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.topology, " ", c.op, " ", c.algorithm));
    SweepOptions options;
    options.topology = c.topology;
    options.op = c.op;
    options.algorithm = c.algorithm;
    options.dims = c.dims;
    options.min_bytes = 1024;
    options.max_bytes = 16 << 20;
    options.step_factor = 128;  // 1 KiB, 128 KiB, 16 MiB
    const SweepResult classes = Sweep(options);
    options.symmetry = false;
    const SweepResult full = Sweep(options);
    ASSERT_FALSE(classes.rows.empty());
    ASSERT_EQ(classes.rows.size(), full.rows.size());
    for (size_t i = 0; i < classes.rows.size(); ++i) {
      const SweepRow& a = classes.rows[i];
      const SweepRow& b = full.rows[i];
      EXPECT_EQ(b.rank_classes, 0);
      if (a.rank_classes > 0) {
        ++by_symmetry;
        EXPECT_LT(a.rank_classes, classes.ranks);
        EXPECT_LT(a.events, b.events);
      }
      EXPECT_EQ(a.algorithm, b.algorithm);
      EXPECT_NEAR(a.time_us, b.time_us, 1e-9 * b.time_us)
          << a.bytes << " B: " << a.time_us << " us by classes, " << b.time_us
          << " us in full";
      EXPECT_EQ(absl::StrFormat("%.2f", a.time_us),
                absl::StrFormat("%.2f", b.time_us));
    }
  }
  // Every case but the RoCE cluster (ECMP's hash makes each flow's route
  // its own) has classes.
  EXPECT_GE(by_symmetry, 3 * (static_cast<int>(cases.size()) - 1));
}

// Where ECMP hashes flows onto spines unevenly, ranks are not equivalent:
// the replay simulates every rank.
TEST(CollectiveSweepTest, EcmpCollisionsDefeatSymmetry) {
  SweepOptions options;
  options.topology = "dgx_h100_cluster:64,routing=ecmp";
  options.algorithm = "hierarchical";
  options.dims = {8, 8, 8};
  options.min_bytes = options.max_bytes = 1 << 20;
  const SweepResult ecmp = Sweep(options);
  ASSERT_EQ(ecmp.rows.size(), 1u);
  EXPECT_EQ(ecmp.rows[0].rank_classes, 0);
  options.topology = "dgx_h100_cluster:64";
  const SweepResult dmodk = Sweep(options);
  ASSERT_EQ(dmodk.rows.size(), 1u);
  EXPECT_GT(dmodk.rows[0].rank_classes, 0);
  // Collisions on the spines slow the cross-leaf steps.
  EXPECT_GT(ecmp.rows[0].time_us, dmodk.rows[0].time_us);
}

// Across two DGX H100 nodes a one-channel ring leaves each node through one
// 50 GB/s NIC; on its default channels (one per NIC) it uses all eight, as
// NCCL's rings do (published runs: about 330-370 GB/s busbw at 1 GiB).
TEST(CollectiveSweepTest, ChannelsSpreadARingOverTheNics) {
  SweepOptions options;
  options.topology = "dgx_h100_cluster:2";
  options.algorithm = "ring";
  options.min_bytes = options.max_bytes = int64_t{1} << 30;
  options.channels = 1;
  const SweepResult one = Sweep(options);
  options.channels = 0;
  const SweepResult nics = Sweep(options);
  ASSERT_EQ(one.rows.size(), 1u);
  ASSERT_EQ(nics.rows.size(), 1u);
  EXPECT_LT(one.rows[0].busbw, 55);
  EXPECT_GT(nics.rows[0].busbw, 300);
  EXPECT_LT(nics.rows[0].busbw, 450);
  // Small messages stay on one channel (at least 32 KiB each).
  options.min_bytes = options.max_bytes = 16 << 10;
  options.channels = 0;
  const SweepResult small_default = Sweep(options);
  options.channels = 1;
  const SweepResult small_one = Sweep(options);
  EXPECT_TRUE(small_default.rows[0] == small_one.rows[0]);
}

// --dims shapes the hierarchical all-reduce: {GPUs a node, nodes} is the
// default; a third level runs (and replays as it runs on rank threads);
// grids that do not hold the group, or other algorithms, are refused.
TEST(CollectiveSweepTest, HierarchicalDims) {
  SweepOptions options;
  options.topology = "dgx_h100_cluster:4";
  options.algorithm = "hierarchical";
  options.min_bytes = 1 << 20;
  options.max_bytes = 64 << 20;
  options.step_factor = 64;
  const SweepResult by_node = Sweep(options);
  options.dims = {8, 4};
  const SweepResult explicit_grid = Sweep(options);
  ASSERT_EQ(by_node.rows.size(), explicit_grid.rows.size());
  for (size_t i = 0; i < by_node.rows.size(); ++i) {
    EXPECT_TRUE(by_node.rows[i] == explicit_grid.rows[i]) << i;
  }
  options.dims = {8, 2, 2};
  const SweepResult three = Sweep(options);
  options.rank_threads = true;
  const SweepResult three_threaded = Sweep(options);
  ASSERT_EQ(three.rows.size(), 2u);
  for (size_t i = 0; i < three.rows.size(); ++i) {
    EXPECT_GT(three.rows[i].time_us, 0);
    EXPECT_TRUE(three.rows[i] == three_threaded.rows[i]) << i;
  }
  options.rank_threads = false;
  options.dims = {8, 3};
  absl::Status wrong = RunCollectiveSweep(options).status();
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("--dims=8,3"), std::string::npos) << wrong;
  options.dims = {8, 4};
  options.algorithm = "ring";
  EXPECT_EQ(RunCollectiveSweep(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// On a whole TPU slice the ranks follow the torus and the hierarchical
// algorithms run rings along its axes: AUTO picks them for reduce-scatter
// and all-gather at 1 MiB on tpu_v4:4x4x4, where they beat the flat ring
// (2 x 63 steps of the ring against 2 x (1 + 3 + 3 + 3) on the torus); the
// replay and the threaded simulation agree on them.
TEST(CollectiveSweepTest, TorusGridOnATpuSlice) {
  for (const char* op : {"reduce_scatter", "all_gather"}) {
    SCOPED_TRACE(op);
    SweepOptions options;
    options.topology = "tpu_v4:4x4x4";
    options.op = op;
    options.min_bytes = options.max_bytes = 1 << 20;
    const SweepResult automatic = Sweep(options);
    ASSERT_EQ(automatic.rows.size(), 1u);
    EXPECT_EQ(automatic.rows[0].algorithm, "auto:hierarchical");
    options.algorithm = "ring";
    const SweepResult ring = Sweep(options);
    ASSERT_EQ(ring.rows.size(), 1u);
    EXPECT_LT(automatic.rows[0].time_us, ring.rows[0].time_us / 2);
    options.algorithm = "hierarchical";
    options.topology = "tpu_v4:2x2x2";
    const SweepResult replayed = Sweep(options);
    options.rank_threads = true;
    const SweepResult threaded = Sweep(options);
    ASSERT_EQ(replayed.rows.size(), 1u);
    EXPECT_TRUE(replayed.rows[0] == threaded.rows[0]);
  }
}

TEST(CollectiveSweepTest, ParseByteSize) {
  EXPECT_EQ(*ParseByteSize("8"), 8);
  EXPECT_EQ(*ParseByteSize("64K"), 65536);
  EXPECT_EQ(*ParseByteSize("1m"), 1 << 20);
  EXPECT_EQ(*ParseByteSize("8G"), 8 * kGiB);
  for (const std::string bad :
       {"", "K", "-1", "0", "1.5G", "8T", "+8", "8GB"}) {
    EXPECT_EQ(ParseByteSize(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(CollectiveSweepTest, BadOptions) {
  auto code = [](SweepOptions o) {
    return RunCollectiveSweep(o).status().code();
  };
  SweepOptions base;
  base.topology = "dgx_h100";
  base.max_bytes = 1024;

  SweepOptions o = base;
  o.op = "all_sum";
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.algorithm = "chain";  // not an all-reduce algorithm
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.op = "barrier";
  o.algorithm = "nccl";
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.gpus = 9;
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.min_bytes = 2048;
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.step_factor = 1;
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.dtype = "complex64";
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.algorithm = "nccl";
  o.trace_path = "/tmp/never.json";
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.topology = "dgx_z100";
  EXPECT_EQ(code(o), absl::StatusCode::kNotFound);
  o = base;
  o.topology = "dgx_h100_cluster:2";
  o.gpus = 12;  // not whole nodes
  o.algorithm = "hierarchical";
  EXPECT_EQ(code(o), absl::StatusCode::kFailedPrecondition);
  o = base;
  o.channels = -1;
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o.channels = 65;
  EXPECT_EQ(code(o), absl::StatusCode::kInvalidArgument);
  o = base;
  o.op = "all_gather";  // rings of one channel
  o.channels = 2;
  absl::Status gather = RunCollectiveSweep(o).status();
  EXPECT_EQ(gather.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(gather.message().find("--channels=2"), std::string::npos) << gather;
}

// The NCCL rows take nccl-tests' setup: ranks per node, the launch mode,
// NCCL_ALGO/NCCL_PROTO, SHARP; bad values are refused with the flag's name.
TEST(CollectiveSweepTest, NcclRunOptionsAndPlacement) {
  SweepOptions options;
  options.topology = "dgx_h100_cluster:4";
  options.algorithm = "nccl";
  options.min_bytes = options.max_bytes = 8;
  options.gpus_per_node = 1;
  absl::StatusOr<SweepResult> one = RunCollectiveSweep(options);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->ranks, 4);
  EXPECT_NE(one->hardware.find("4 ranks on 4 node(s)"), std::string::npos)
      << one->hardware;

  options.gpus_per_node = 0;
  options.topology = "dgx_h100";
  options.nccl.gpus_per_thread = 8;
  absl::StatusOr<SweepResult> grouped = RunCollectiveSweep(options);
  options.nccl.gpus_per_thread = 1;
  absl::StatusOr<SweepResult> mpi = RunCollectiveSweep(options);
  ASSERT_TRUE(grouped.ok() && mpi.ok());
  // One thread launching 8 kernels per collective is slower at 8 bytes.
  EXPECT_GT(grouped->rows[0].time_us, mpi->rows[0].time_us);

  options.min_bytes = options.max_bytes = kGiB;
  options.nccl.algorithms = "^nvls";
  absl::StatusOr<SweepResult> no_nvls = RunCollectiveSweep(options);
  ASSERT_TRUE(no_nvls.ok()) << no_nvls.status();
  EXPECT_EQ(no_nvls->rows[0].algorithm, "nccl:ring/simple");

  options.nccl.algorithms = "rings";
  absl::StatusOr<SweepResult> bad = RunCollectiveSweep(options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "--nccl_algo"))
      << bad.status();
  options.nccl.algorithms = "";
  options.nccl.iters = 0;
  EXPECT_EQ(RunCollectiveSweep(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.nccl.iters = 20;
  options.gpus_per_node = 16;  // a DGX H100 has 8
  EXPECT_EQ(RunCollectiveSweep(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distsim
