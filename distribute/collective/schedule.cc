#include "distribute/collective/schedule.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace distribute {
namespace collective {

namespace {

constexpr Algorithm kAllAlgorithms[] = {
    Algorithm::kRing,
    Algorithm::kDoubleBinaryTree,
    Algorithm::kRecursiveHalvingDoubling,
    Algorithm::kDirect,
    Algorithm::kHierarchical,
    Algorithm::kChain,
    Algorithm::kBinaryTree,
    Algorithm::kPairwise,
    Algorithm::kDissemination,
};

}  // namespace

int64_t Schedule::NumSteps() const {
  int64_t total = 0;
  for (const RankProgram& program : ranks) {
    total += static_cast<int64_t>(program.steps.size());
  }
  return total;
}

int64_t Schedule::NumMessages() const {
  int64_t total = 0;
  for (const RankProgram& program : ranks) {
    for (const Step& step : program.steps) {
      if (step.kind == StepKind::kSend) ++total;
    }
  }
  return total;
}

int64_t Schedule::ElementsSent() const {
  int64_t total = 0;
  for (const RankProgram& program : ranks) {
    for (const Step& step : program.steps) {
      if (step.kind == StepKind::kSend) total += step.src.count;
    }
  }
  return total;
}

std::string Schedule::DebugString() const {
  std::string out = absl::StrCat(
      OpName(op), " ", AlgorithmName(algorithm), " n=", options.group_size,
      " count=", options.count, " num_chunks=", options.num_chunks,
      " chunk_elements=", options.chunk_elements, " root=", options.root,
      " ranks_per_node=", options.ranks_per_node,
      options.num_channels > 1
          ? absl::StrCat(" num_channels=", options.num_channels)
          : "",
      options.dims.empty()
          ? ""
          : absl::StrCat(" dims=", absl::StrJoin(options.dims, "x")),
      "\n");
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const RankProgram& program = ranks[rank];
    absl::StrAppend(&out, "rank ", rank, " (input ", program.input_count,
                    ", output ", program.output_count, ", scratch ",
                    program.scratch_count, "):\n");
    for (size_t i = 0; i < program.steps.size(); ++i) {
      absl::StrAppend(&out, "  #", i, " ", StepDebugString(program.steps[i]),
                      "\n");
    }
  }
  return out;
}

Shard ShardOf(int64_t count, int64_t parts, int64_t index) {
  const int64_t base = count / parts;
  const int64_t extra = count % parts;
  Shard shard;
  shard.offset = index * base + (index < extra ? index : extra);
  shard.count = base + (index < extra ? 1 : 0);
  return shard;
}

int64_t ShardOwner(int64_t count, int64_t parts, int64_t element) {
  const int64_t base = count / parts;
  const int64_t extra = count % parts;
  const int64_t big = extra * (base + 1);  // elements in the larger shards
  if (element < big) return element / (base + 1);
  return extra + (element - big) / base;
}

absl::string_view OpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kReduce:
      return "reduce";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kBarrier:
      return "barrier";
  }
  return "unknown_op";
}

absl::string_view AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kDoubleBinaryTree:
      return "tree";
    case Algorithm::kRecursiveHalvingDoubling:
      return "rhd";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kChain:
      return "chain";
    case Algorithm::kBinaryTree:
      return "binary_tree";
    case Algorithm::kPairwise:
      return "pairwise";
    case Algorithm::kDissemination:
      return "dissemination";
  }
  return "unknown_algorithm";
}

absl::StatusOr<Algorithm> AlgorithmFromName(absl::string_view name) {
  std::vector<std::string> known;
  for (Algorithm algorithm : kAllAlgorithms) {
    if (AlgorithmName(algorithm) == name) return algorithm;
    known.emplace_back(AlgorithmName(algorithm));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown collective algorithm '", name,
                   "'; known algorithms: ", absl::StrJoin(known, ", ")));
}

absl::string_view BufferName(BufferKind buffer) {
  switch (buffer) {
    case BufferKind::kInput:
      return "input";
    case BufferKind::kOutput:
      return "output";
    case BufferKind::kScratch:
      return "scratch";
  }
  return "unknown_buffer";
}

absl::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kSend:
      return "SEND";
    case StepKind::kRecv:
      return "RECV";
    case StepKind::kReduce:
      return "REDUCE";
    case StepKind::kCopy:
      return "COPY";
  }
  return "UNKNOWN";
}

std::string RangeDebugString(const BufferRange& range) {
  return absl::StrCat(BufferName(range.buffer), "[", range.offset, ",+",
                      range.count, ")");
}

std::string StepDebugString(const Step& step) {
  std::string out(StepKindName(step.kind));
  switch (step.kind) {
    case StepKind::kSend:
      absl::StrAppend(&out, " to ", step.peer, " tag ", step.tag, " ",
                      RangeDebugString(step.src));
      break;
    case StepKind::kRecv:
      absl::StrAppend(&out, " from ", step.peer, " tag ", step.tag, " ",
                      RangeDebugString(step.dst));
      break;
    case StepKind::kReduce:
      absl::StrAppend(&out, " ", RangeDebugString(step.dst),
                      " += ", RangeDebugString(step.src));
      break;
    case StepKind::kCopy:
      absl::StrAppend(&out, " ", RangeDebugString(step.dst), " = ",
                      RangeDebugString(step.src));
      break;
  }
  if (!step.deps.empty()) {
    absl::StrAppend(&out, " deps {", absl::StrJoin(step.deps, ","), "}");
  }
  return out;
}

}  // namespace collective
}  // namespace distribute
