#include "distribute/ps/ps_checkpoint.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "distribute/checkpoint/checkpoint_file.h"
#include "distribute/checkpoint/file_util.h"
#include "distribute/partitioners.h"

namespace distribute {
namespace ps {
namespace {

// Restores one variable whose shards `held` (some, or all) the ps tasks
// hold.
absl::Status RestoreSharded(ParameterServerStrategy& strategy,
                            const std::string& name,
                            const devices::Tensor& saved,
                            const std::vector<ShardInfo>& held) {
  const int64_t n = held.front().num_shards;
  const int num_ps = strategy.num_ps();
  // Shard k sits on ps (first + k) % num_ps.
  const int first = static_cast<int>(
      ((held.front().ps - held.front().shard) % num_ps + num_ps) % num_ps);
  std::vector<VariableShard> pieces = {VariableShard{saved.shape(), 0}};
  if (n > 1) {
    if (saved.shape().rank() == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "variable \"", name, "\" is saved as a scalar but the ps tasks hold ",
          "it in ", n, " shards"));
    }
    std::vector<int64_t> parts(static_cast<size_t>(saved.shape().rank()), 1);
    parts[0] = n;
    absl::StatusOr<std::vector<VariableShard>> split =
        ShardVariableShape(saved.shape(), parts);
    if (!split.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "variable \"", name, "\" as saved (", saved.shape().DebugString(),
          ") does not split into the ", n,
          " shards the ps tasks hold: ", split.status().message()));
    }
    pieces = *std::move(split);
  }
  PsClient& client = strategy.client();
  for (int64_t k = 0; k < n; ++k) {
    const VariableShard& piece = pieces[static_cast<size_t>(k)];
    const ShardInfo info{static_cast<int>((first + k) % num_ps), k, n,
                         piece.offset,
                         saved.shape().rank() == 0 ? 1 : piece.shape.dim(0)};
    devices::Tensor value = saved;
    if (n > 1) {
      ASSIGN_OR_RETURN(devices::Tensor rows,
                       RowsOf(saved, piece.offset, piece.shape.dim(0)));
      value = std::move(rows);
    }
    const ShardInfo* there = nullptr;
    for (const ShardInfo& h : held) {
      if (h.shard == k) there = &h;
    }
    absl::Status done;
    if (there == nullptr) {
      done = client.CreateShard(name, info, value);
    } else if (there->ps != info.ps || there->num_shards != n) {
      done = absl::FailedPreconditionError(absl::StrCat(
          "shard ", k, " of variable \"", name, "\" is on ps task ", there->ps,
          ", where the other shards put it on ", info.ps));
    } else if (there->offset != info.offset || there->rows != info.rows) {
      done = absl::InvalidArgumentError(
          absl::StrCat("shard ", k, " of variable \"", name, "\" holds rows [",
                       there->offset, ", ", there->offset + there->rows,
                       ") on the ps tasks, where the saved variable (",
                       saved.shape().DebugString(), ") has rows [", info.offset,
                       ", ", info.offset + info.rows,
                       "): the checkpoint's variable has another "
                       "shape"));
    } else {
      done = client.AssignShard(name, info, value);
    }
    if (!done.ok()) {
      return absl::Status(done.code(),
                          absl::StrCat("restoring shard ", k, " of variable \"",
                                       name, "\": ", done.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SaveVariables(PsClient& ps, const std::vector<std::string>& names,
                           const std::string& path) {
  std::vector<checkpoint::CheckpointEntry> entries;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable \"", name, "\" is named twice"));
    }
    ASSIGN_OR_RETURN(devices::Tensor value, ps.Read(name));
    entries.push_back(checkpoint::CheckpointEntry{name, std::move(value)});
  }
  ASSIGN_OR_RETURN(std::string bytes, checkpoint::EncodeCheckpoint(entries));
  return checkpoint::WriteFileAtomically(path, bytes);
}

absl::Status RestoreVariables(ParameterServerStrategy& strategy,
                              const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, checkpoint::ReadFileToString(path));
  ASSIGN_OR_RETURN(std::vector<checkpoint::CheckpointEntry> entries,
                   checkpoint::DecodeCheckpoint(bytes, path));
  for (const checkpoint::CheckpointEntry& entry : entries) {
    ASSIGN_OR_RETURN(std::vector<ShardInfo> held,
                     strategy.client().HeldShards(entry.name));
    RETURN_IF_ERROR(
        held.empty() ? strategy.CreateVariable(entry.name, entry.value).status()
                     : RestoreSharded(strategy, entry.name, entry.value, held));
  }
  return absl::OkStatus();
}

}  // namespace ps
}  // namespace distribute
