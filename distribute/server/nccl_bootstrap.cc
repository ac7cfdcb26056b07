#include "distribute/server/nccl_bootstrap.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/cuda/nccl_api.h"
#include "devices/status_macros.h"

namespace distribute {
namespace {

// The first byte of what the chief publishes under the group's key.
constexpr char kIdBlob = 'I';
constexpr char kRefusalBlob = 'R';

std::string EncodeSize(uint64_t size) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) {
    bytes.push_back(static_cast<char>(size & 0xff));
    size >>= 8;
  }
  return bytes;
}

uint64_t DecodeSize(absl::string_view bytes) {
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) {
    size = (size << 8) | static_cast<unsigned char>(bytes[i]);
  }
  return size;
}

// Where a task publishes how many ranks it counts, for the chief to check.
BlobKey SizeKey(const BlobKey& key) {
  return BlobKey{absl::StrCat(key.group, "/size"), key.instance};
}

// How much longer than `timeout` a task waits for the chief's blob: the
// chief may spend the whole timeout waiting for a task that never comes,
// and its refusal must still reach the tasks that did.
constexpr absl::Duration kRefusalGrace = absl::Seconds(10);

// The chief's fetches of the counts are made in rounds of at most this,
// so that a disagreement is reported without waiting for a missing task.
constexpr absl::Duration kCountRound = absl::Seconds(1);

// The chief's check of the other tasks' counts of the group's ranks,
// fetched in parallel within one `timeout`: OK, FAILED_PRECONDITION naming
// a task that counts otherwise (as soon as its count comes), or the error
// of a task whose count did not come, naming it.
absl::Status CheckTaskSizes(Server& local, absl::string_view chief_target,
                            const BlobKey& key, int size,
                            const std::vector<std::string>& other_tasks,
                            absl::Duration timeout) {
  std::vector<std::string> pending;
  for (const std::string& target : other_tasks) {
    if (target == chief_target ||
        std::find(pending.begin(), pending.end(), target) != pending.end()) {
      continue;  // The chief publishes no count; one fetch per task.
    }
    pending.push_back(target);
  }
  const absl::Time deadline = absl::Now() + timeout;
  while (!pending.empty()) {
    const absl::Duration round = std::min(kCountRound, deadline - absl::Now());
    std::vector<absl::StatusOr<std::string>> counts(
        pending.size(), absl::UnknownError("not fetched"));
    {
      std::vector<std::thread> fetchers;
      for (size_t i = 0; i < pending.size(); ++i) {
        fetchers.emplace_back([&, i] {
          counts[i] = round > absl::ZeroDuration()
                          ? FetchBlob(local.channel_options(), pending[i],
                                      SizeKey(key), round)
                          : absl::DeadlineExceededError("no time left");
        });
      }
      for (std::thread& fetcher : fetchers) fetcher.join();
    }
    std::vector<std::string> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      const absl::StatusOr<std::string>& theirs = counts[i];
      if (absl::IsDeadlineExceeded(theirs.status())) {
        still.push_back(pending[i]);
        continue;
      }
      if (!theirs.ok()) {
        return absl::Status(
            theirs.status().code(),
            absl::StrCat("the chief could not learn the task at ", pending[i],
                         "'s count of NCCL group \"", key.ToString(),
                         "\": ", theirs.status().message()));
      }
      if (theirs->size() != 8) {
        return absl::InvalidArgumentError(
            absl::StrCat("the task at ", pending[i], " published a count of ",
                         theirs->size(), " bytes for NCCL group \"",
                         key.ToString(), "\", not 8"));
      }
      const uint64_t counted = DecodeSize(*theirs);
      if (counted != static_cast<uint64_t>(size)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the task at ", pending[i], " counts ", counted,
            " ranks in NCCL group \"", key.ToString(),
            "\" but the chief counts ", size,
            "; every task must count the same ranks (a "
            "MultiWorkerMirroredStrategy needs as many GPUs on every "
            "worker)"));
      }
    }
    pending = std::move(still);
    if (!pending.empty() && absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the tasks at ", absl::StrJoin(pending, ", "),
          " did not publish their count of NCCL group \"", key.ToString(),
          "\" within ", absl::FormatDuration(timeout), "; are they running?"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>>
CreateNcclRankOverGrpc(Server& local, absl::string_view chief_target,
                       const BlobKey& key, devices::cuda::CudaDevice& device,
                       int rank, std::vector<std::string> device_names,
                       absl::Duration timeout,
                       std::vector<std::string> other_tasks) {
  return CreateNcclRanksOverGrpc(local, chief_target, key, {&device}, rank,
                                 std::move(device_names), timeout,
                                 std::move(other_tasks));
}

absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>>
CreateNcclRanksOverGrpc(Server& local, absl::string_view chief_target,
                        const BlobKey& key,
                        std::vector<devices::cuda::CudaDevice*> devices,
                        int first_rank, std::vector<std::string> device_names,
                        absl::Duration timeout,
                        std::vector<std::string> other_tasks) {
  const int size = static_cast<int>(device_names.size());
  const int count = static_cast<int>(devices.size());
  if (count < 1 || first_rank < 0 || first_rank + count > size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NCCL ranks ", first_rank, "..", first_rank + count - 1,
        " (one per local GPU) are not all inside the group's ranks [0, ", size,
        ") given by device_names"));
  }
  std::string blob;
  if (first_rank != 0) {
    // The chief checks this count (when it knows the tasks) before it
    // publishes anything, so that every task hears a disagreement at once.
    RETURN_IF_ERROR(PublishBlob(local, SizeKey(key), EncodeSize(size)));
    ASSIGN_OR_RETURN(std::string fetched,
                     FetchBlob(local.channel_options(), chief_target, key,
                               timeout + kRefusalGrace));
    blob = std::move(fetched);
  } else {
    absl::Status agreed =
        CheckTaskSizes(local, chief_target, key, size, other_tasks, timeout);
    if (!agreed.ok()) {
      // Every task waits for the chief's blob: tell them why there is none.
      absl::Status told = PublishBlob(local, key, EncodeNcclRefusal(agreed));
      if (!told.ok()) {
        return absl::Status(agreed.code(),
                            absl::StrCat(agreed.message(),
                                         " (and the refusal could not be "
                                         "published for the other tasks: ",
                                         told.message(), ")"));
      }
      return agreed;
    }
    ASSIGN_OR_RETURN(std::string made,
                     devices::cuda::NcclCommunicator::NewUniqueId());
    blob = EncodeNcclGroupBlob(made, size);
    RETURN_IF_ERROR(PublishBlob(local, key, blob));
  }
  ASSIGN_OR_RETURN(std::string id, DecodeNcclGroupBlob(blob, size, key));
  return devices::cuda::NcclCommunicator::CreateRanks(
      std::move(devices), id, first_rank, std::move(device_names), timeout);
}

std::string EncodeNcclGroupBlob(absl::string_view unique_id, int group_size) {
  return absl::StrCat(std::string(1, kIdBlob), unique_id,
                      EncodeSize(static_cast<uint64_t>(group_size)));
}

std::string EncodeNcclRefusal(const absl::Status& why) {
  return absl::StrCat(std::string(1, kRefusalBlob),
                      static_cast<int>(why.code()), ":", why.message());
}

absl::StatusOr<std::string> DecodeNcclGroupBlob(absl::string_view blob,
                                                int group_size,
                                                const BlobKey& key) {
  if (!blob.empty() && blob[0] == kRefusalBlob) {
    const absl::string_view rest = blob.substr(1);
    const size_t colon = rest.find(':');
    int code = 0;
    if (colon != absl::string_view::npos &&
        absl::SimpleAtoi(rest.substr(0, colon), &code) && code > 0 &&
        code <= static_cast<int>(absl::StatusCode::kUnauthenticated)) {
      return absl::Status(
          static_cast<absl::StatusCode>(code),
          absl::StrCat("the chief did not form NCCL group \"", key.ToString(),
                       "\": ", rest.substr(colon + 1)));
    }
  }
  const size_t id_bytes =
      static_cast<size_t>(devices::cuda::kNcclUniqueIdBytes);
  if (blob.size() != 1 + id_bytes + 8 || blob[0] != kIdBlob) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the NCCL group published under \"", key.ToString(), "\" is ",
        blob.size(), " bytes, not ", 1 + id_bytes + 8,
        " (a tag, the unique id and the group size), nor a refusal; the chief "
        "must publish what EncodeNcclGroupBlob or EncodeNcclRefusal made"));
  }
  const uint64_t size = DecodeSize(blob.substr(1 + id_bytes));
  if (size != static_cast<uint64_t>(group_size)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the chief's NCCL group \"", key.ToString(), "\" has ", size,
        " ranks but this task counts ", group_size,
        "; every task must count the same ranks (a MultiWorkerMirroredStrategy "
        "needs as many GPUs on every worker)"));
  }
  return std::string(blob.substr(1, id_bytes));
}

}  // namespace distribute
