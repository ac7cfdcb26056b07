#include "devices/platform_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace devices {

absl::Status PlatformRegistry::Register(std::string prefix,
                                        PlatformFactory factory) {
  if (prefix.empty() || prefix.find(':') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "platform prefix '", prefix,
        "' must be non-empty and contain no ':' (specs are '<prefix>[:...]')"));
  }
  if (!factory) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform factory for '", prefix, "' is empty"));
  }
  absl::MutexLock lock(&mu_);
  if (!factories_.emplace(prefix, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a platform factory for '", prefix, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Platform>> PlatformRegistry::Create(
    absl::string_view spec) const {
  const absl::string_view prefix = spec.substr(0, spec.find(':'));
  PlatformFactory factory;
  {
    absl::MutexLock lock(&mu_);
    auto it = factories_.find(prefix);
    if (it != factories_.end()) factory = it->second;
  }
  if (!factory) {
    std::vector<std::string> known = List();
    return absl::NotFoundError(absl::StrCat(
        "no platform named '", prefix, "' (spec '", spec,
        "'); the platforms are: ",
        known.empty() ? "none" : absl::StrJoin(known, ", "),
        " (e.g. host:4, sim:dgx_h100); a C++ program registers them with "
        "devices::RegisterHostPlatform() and the like"));
  }
  // Called without the lock: a factory may use the registry itself.
  return factory(spec);
}

std::vector<std::string> PlatformRegistry::List() const {
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& entry : factories_) names.push_back(entry.first);
  }
  std::sort(names.begin(), names.end());
  return names;
}

PlatformRegistry& PlatformRegistry::Global() {
  static PlatformRegistry* const registry = new PlatformRegistry();
  return *registry;
}

absl::Status RegisterPlatformFactory(std::string prefix,
                                     PlatformFactory factory) {
  return PlatformRegistry::Global().Register(std::move(prefix),
                                             std::move(factory));
}

absl::StatusOr<std::unique_ptr<Platform>> CreatePlatform(
    absl::string_view spec) {
  return PlatformRegistry::Global().Create(spec);
}

std::vector<std::string> ListPlatformFactories() {
  return PlatformRegistry::Global().List();
}

}  // namespace devices
