#include "distribute/server/internal/blob_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace server_internal {
namespace {

// How often a waiter checks whether its caller gave up.
constexpr absl::Duration kCancelPoll = absl::Milliseconds(50);

}  // namespace

absl::Status BlobStore::Publish(absl::string_view key, std::string value) {
  if (key.empty()) {
    return absl::InvalidArgumentError(
        "cannot publish a blob under an empty key; name the group and "
        "instance");
  }
  absl::MutexLock lock(&mu_);
  if (!shutdown_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot publish \"", key, "\": ", shutdown_.message()));
  }
  auto it = values_.find(key);
  if (it != values_.end()) {
    if (it->second == value) return absl::OkStatus();
    return absl::AlreadyExistsError(
        absl::StrCat("a different blob was already published under \"", key,
                     "\"; each group instance needs a key of its own"));
  }
  values_.emplace(std::string(key), std::move(value));
  return absl::OkStatus();
}

absl::StatusOr<std::string> BlobStore::Wait(
    absl::string_view key, absl::Time deadline,
    const std::function<bool()>& cancelled) {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (!shutdown_.ok()) {
      return absl::UnavailableError(
          absl::StrCat("fetching \"", key, "\" failed: ", shutdown_.message()));
    }
    auto it = values_.find(key);
    if (it != values_.end()) {
      ++fetches_[it->first];
      return it->second;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("nothing was published under \"", key, "\" in time"));
    }
    if (cancelled()) {
      return absl::CancelledError(
          absl::StrCat("the fetch of \"", key, "\" was cancelled"));
    }
    // Publish and Shutdown change the state under mu_; the condition makes
    // any such change wake this waiter.
    std::pair<BlobStore*, size_t> seen(this, values_.size());
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](std::pair<BlobStore*, size_t>* arg)
                                   ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                     return arg->first->values_.size() !=
                                                arg->second ||
                                            !arg->first->shutdown_.ok();
                                   },
                              &seen),
                          std::min(deadline, now + kCancelPoll));
  }
}

absl::Status BlobStore::AwaitFetches(absl::string_view key, int64_t count,
                                     absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto fetched = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = fetches_.find(key);
    return it != fetches_.end() && it->second >= count;
  };
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !shutdown_.ok() || fetched();
  };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  if (fetched()) return absl::OkStatus();
  if (!shutdown_.ok()) {
    return absl::UnavailableError(
        absl::StrCat("\"", key, "\" was fetched fewer than ", count,
                     " times before ", shutdown_.message()));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "\"", key, "\" was fetched fewer than ", count, " times in time"));
}

void BlobStore::Shutdown(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (shutdown_.ok()) {
    shutdown_ =
        status.ok() ? absl::UnavailableError("the server stopped") : status;
  }
}

}  // namespace server_internal
}  // namespace distribute
