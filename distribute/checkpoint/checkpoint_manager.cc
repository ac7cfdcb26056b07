#include "distribute/checkpoint/checkpoint_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "devices/status_macros.h"
#include "distribute/checkpoint/crc32c.h"
#include "distribute/checkpoint/file_util.h"

namespace distribute {
namespace checkpoint {
namespace {

constexpr absl::string_view kLatestKey = "model_checkpoint_path: ";
constexpr absl::string_view kAllKey = "all_model_checkpoint_paths: ";
constexpr absl::string_view kCrcKey = "# crc32c: ";

std::string StateText(const std::vector<std::string>& kept) {
  std::string body;
  if (!kept.empty())
    absl::StrAppend(&body, kLatestKey, "\"", kept.back(), "\"\n");
  for (const std::string& name : kept) {
    absl::StrAppend(&body, kAllKey, "\"", name, "\"\n");
  }
  return absl::StrCat(body, kCrcKey, absl::StrFormat("%08x", Crc32c(body)),
                      "\n");
}

absl::Status BadState(const std::string& path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(
      "checkpoint state file '", path, "' is corrupt: ", what,
      "; delete it to start afresh, or rewrite it naming the checkpoints to "
      "keep"));
}

// The names the state file at `path` lists, oldest first (the latest last);
// empty when there is no file.
absl::StatusOr<std::vector<std::string>> ReadState(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (absl::IsNotFound(text.status())) return std::vector<std::string>{};
  RETURN_IF_ERROR(text.status());
  const size_t crc_at = text->rfind(std::string(kCrcKey));
  if (crc_at == std::string::npos ||
      (crc_at != 0 && (*text)[crc_at - 1] != '\n')) {
    return BadState(path, "it has no crc32c line (truncated?)");
  }
  const absl::string_view body = absl::string_view(*text).substr(0, crc_at);
  absl::string_view crc_text =
      absl::string_view(*text).substr(crc_at + kCrcKey.size());
  crc_text = absl::StripSuffix(crc_text, "\n");
  uint32_t crc = 0;
  if (crc_text.size() != 8 || !absl::SimpleHexAtoi(crc_text, &crc)) {
    return BadState(path, "its crc32c line does not parse");
  }
  if (crc != Crc32c(body)) return BadState(path, "its CRC-32C does not match");
  std::string latest;
  std::vector<std::string> all;
  for (absl::string_view line : absl::StrSplit(body, '\n', absl::SkipEmpty())) {
    absl::string_view value;
    bool is_latest = false;
    if (absl::StartsWith(line, kLatestKey)) {
      value = line.substr(kLatestKey.size());
      is_latest = true;
    } else if (absl::StartsWith(line, kAllKey)) {
      value = line.substr(kAllKey.size());
    } else {
      return BadState(path, absl::StrCat("unexpected line '", line, "'"));
    }
    if (value.size() < 2 || value.front() != '"' || value.back() != '"') {
      return BadState(path, absl::StrCat("unquoted path in '", line, "'"));
    }
    value = value.substr(1, value.size() - 2);
    if (is_latest) {
      latest = std::string(value);
    } else {
      all.emplace_back(value);
    }
  }
  if (!latest.empty()) {
    all.erase(std::remove(all.begin(), all.end(), latest), all.end());
    all.push_back(latest);
  }
  return all;
}

std::string Resolve(const std::string& directory, const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;
  return JoinPath(directory, name);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CheckpointsInDirectory(
    const std::string& directory) {
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   ReadState(JoinPath(directory, kStateFileName)));
  std::vector<std::string> out;
  for (const std::string& name : names) out.push_back(Resolve(directory, name));
  return out;
}

absl::StatusOr<std::optional<std::string>> LatestCheckpoint(
    const std::string& directory) {
  ASSIGN_OR_RETURN(std::vector<std::string> all,
                   CheckpointsInDirectory(directory));
  if (all.empty()) return std::optional<std::string>();
  return std::optional<std::string>(all.back());
}

// What WriteFileAtomically leaves behind when it crashes:
// "<name>.tmp-<pid>".
static bool IsTemporaryFileName(absl::string_view name) {
  const size_t at = name.rfind(kTempSuffix);
  if (at == absl::string_view::npos) return false;
  const absl::string_view pid = name.substr(at + kTempSuffix.size());
  return !pid.empty() && std::all_of(pid.begin(), pid.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
}

absl::StatusOr<std::unique_ptr<CheckpointManager>> CheckpointManager::Create(
    Checkpoint& checkpoint, std::string directory,
    std::optional<int64_t> max_to_keep, std::string checkpoint_name) {
  if (directory.empty() || checkpoint_name.empty()) {
    return absl::InvalidArgumentError(
        "CheckpointManager needs a directory and a checkpoint name");
  }
  if (checkpoint_name.find('/') != std::string::npos ||
      absl::StrContains(checkpoint_name, kTempSuffix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint_name '", checkpoint_name,
                     "' must not contain '/' or '", kTempSuffix,
                     "' (the suffix of temporary files, which the chief "
                     "deletes)"));
  }
  if (max_to_keep.has_value() && *max_to_keep < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_to_keep must be at least 1 (or unset to keep every checkpoint), "
        "got ",
        *max_to_keep));
  }
  if (checkpoint.options().role.is_chief) {
    RETURN_IF_ERROR(CreateDirectories(directory));
    ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(directory));
    for (const std::string& name : names) {
      if (!IsTemporaryFileName(name)) continue;
      RETURN_IF_ERROR(DeleteFile(JoinPath(directory, name)));
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> kept,
                   ReadState(JoinPath(directory, kStateFileName)));
  std::unique_ptr<CheckpointManager> manager(
      new CheckpointManager(checkpoint, std::move(directory), max_to_keep,
                            std::move(checkpoint_name)));
  manager->kept_ = std::move(kept);
  return manager;
}

absl::StatusOr<std::string> CheckpointManager::Save(
    std::optional<int64_t> checkpoint_number) {
  if (checkpoint_number.has_value() && *checkpoint_number < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint_number must be 0 or more, got ", *checkpoint_number));
  }
  const int64_t counter = checkpoint_.save_counter_ + 1;
  const std::string name =
      absl::StrCat(checkpoint_name_, "-", checkpoint_number.value_or(counter));
  const std::string path = JoinPath(directory_, name);
  ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries,
                   checkpoint_.Snapshot(counter));
  absl::Status s = checkpoint_.WriteEntries(path, entries);
  RETURN_IF_ERROR(s);

  std::vector<std::string> kept = kept_;
  kept.erase(std::remove(kept.begin(), kept.end(), name), kept.end());
  kept.push_back(name);
  std::vector<std::string> expired;
  while (max_to_keep_.has_value() &&
         static_cast<int64_t>(kept.size()) > *max_to_keep_) {
    expired.push_back(kept.front());
    kept.erase(kept.begin());
  }
  const CheckpointOptions& options = checkpoint_.options();
  if (options.role.is_chief) {
    if (options.fault_hook) {
      s = options.fault_hook("data_committed", path);
      RETURN_IF_ERROR(s);
    }
    s = WriteFileAtomically(JoinPath(directory_, kStateFileName),
                            StateText(kept), options.fault_hook,
                            "state_written");
    RETURN_IF_ERROR(s);
  }
  // The save is committed: the manager follows the state file (and the
  // other workers' managers) even if a deletion below fails.
  kept_ = std::move(kept);
  checkpoint_.save_counter_ = counter;
  if (options.role.is_chief) {
    // Only now that the state file no longer names them.
    for (const std::string& old : expired) {
      s = DeleteFile(Resolve(directory_, old));
      if (!s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat(path,
                                         " was saved and is the latest "
                                         "checkpoint, but deleting the "
                                         "expired ",
                                         old, " failed: ", s.message()));
      }
    }
  }
  return path;
}

absl::StatusOr<std::optional<std::string>> CheckpointManager::RestoreLatest() {
  std::optional<std::string> latest = latest_checkpoint();
  if (!latest.has_value()) return latest;
  RETURN_IF_ERROR(checkpoint_.Restore(*latest));
  return latest;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const {
  if (kept_.empty()) return std::nullopt;
  return Resolve(directory_, kept_.back());
}

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::vector<std::string> out;
  for (const std::string& name : kept_)
    out.push_back(Resolve(directory_, name));
  return out;
}

}  // namespace checkpoint
}  // namespace distribute
