// Fault scripts and their injection; see faults.h.
#include "simulator/faults.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "devices/status_macros.h"
#include "simulator/engine.h"
#include "simulator/time.h"

namespace simulator {

FaultTargetKind TargetKindOf(FaultType type) {
  switch (type) {
    case FaultType::kLinkCut:
    case FaultType::kLinkSlowdown:
      return FaultTargetKind::kLink;
    case FaultType::kDeviceDeath:
    case FaultType::kStraggler:
      return FaultTargetKind::kDevice;
    case FaultType::kHostDeath:
      return FaultTargetKind::kHost;
  }
  return FaultTargetKind::kLink;
}

absl::string_view FaultTypeName(FaultType type) {
  switch (type) {
    case FaultType::kLinkCut:
      return "link cut";
    case FaultType::kLinkSlowdown:
      return "link slowdown";
    case FaultType::kDeviceDeath:
      return "device death";
    case FaultType::kHostDeath:
      return "host death";
    case FaultType::kStraggler:
      return "straggler";
  }
  return "unknown fault";
}

absl::string_view TargetKindName(FaultTargetKind kind) {
  switch (kind) {
    case FaultTargetKind::kLink:
      return "link";
    case FaultTargetKind::kDevice:
      return "device";
    case FaultTargetKind::kHost:
      return "host";
  }
  return "part";
}

std::string Fault::Describe() const {
  std::string text(FaultTypeName(type));
  if (type == FaultType::kLinkSlowdown || type == FaultType::kStraggler) {
    absl::StrAppend(&text, " (x", factor, ")");
  }
  absl::StrAppend(&text, " of ", TargetKindName(TargetKindOf(type)), " '",
                  target, "'");
  if (trigger.by_time) {
    absl::StrAppend(&text, " at ", FormatTime(trigger.time));
  } else {
    absl::StrAppend(&text, " at operation ", trigger.operation);
  }
  return text;
}

FaultScript& FaultScript::Add(Fault fault) {
  faults_.push_back(std::move(fault));
  return *this;
}

FaultScript& FaultScript::CutLink(std::string link, FaultTrigger trigger) {
  return Add(Fault{FaultType::kLinkCut, std::move(link), 1.0, trigger});
}

FaultScript& FaultScript::SlowLink(std::string link, double factor,
                                   FaultTrigger trigger) {
  return Add(Fault{FaultType::kLinkSlowdown, std::move(link), factor, trigger});
}

FaultScript& FaultScript::KillDevice(std::string device, FaultTrigger trigger) {
  return Add(Fault{FaultType::kDeviceDeath, std::move(device), 1.0, trigger});
}

FaultScript& FaultScript::KillHost(std::string host, FaultTrigger trigger) {
  return Add(Fault{FaultType::kHostDeath, std::move(host), 1.0, trigger});
}

FaultScript& FaultScript::Straggle(std::string device, double factor,
                                   FaultTrigger trigger) {
  return Add(Fault{FaultType::kStraggler, std::move(device), factor, trigger});
}

absl::Status FaultScript::Validate() const {
  for (size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    const std::string where =
        absl::StrCat("fault #", i, " (", f.Describe(), ")");
    if (f.target.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has no target; name the ",
                       TargetKindName(TargetKindOf(f.type)), " it hits"));
    }
    if (f.trigger.by_time && f.trigger.time < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " fires at a negative time"));
    }
    if (!f.trigger.by_time && f.trigger.operation < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " fires at operation ", f.trigger.operation,
                       "; operations are counted from 1"));
    }
    if ((f.type == FaultType::kLinkSlowdown ||
         f.type == FaultType::kStraggler) &&
        !(std::isfinite(f.factor) && f.factor > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has factor ", f.factor,
                       "; use a finite factor > 0 (2 means twice as slow)"));
    }
  }
  return absl::OkStatus();
}

FaultInjector::FaultInjector(Engine& engine, FaultScript script)
    : engine_(engine), script_(std::move(script)) {}

void FaultInjector::AddListener(FaultListener& listener) {
  listeners_.push_back(&listener);
}

absl::Status FaultInjector::Arm() {
  if (armed_) {
    return absl::FailedPreconditionError(
        "the fault script is armed already; call Arm once");
  }
  RETURN_IF_ERROR(script_.Validate());
  const std::vector<Fault>& faults = script_.faults();
  for (const Fault& f : faults) {
    const FaultTargetKind kind = TargetKindOf(f.type);
    bool owned = false;
    for (const FaultListener* listener : listeners_) {
      owned = owned || listener->OwnsTarget(kind, f.target);
    }
    if (!owned) {
      return absl::NotFoundError(absl::StrCat(
          "fault script names ", TargetKindName(kind), " '", f.target, "' (",
          f.Describe(), ") but no model has it; add the ", TargetKindName(kind),
          " before arming, or fix the name"));
    }
    if (f.trigger.by_time && f.trigger.time < engine_.now()) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.Describe(), " is in the past: the clock is at ",
                       FormatTime(engine_.now())));
    }
  }
  for (size_t i = 0; i < faults.size(); ++i) {
    const Fault& f = faults[i];
    if (f.trigger.by_time) {
      RETURN_IF_ERROR(engine_
                          .ScheduleAt(f.trigger.time, kFaultActor,
                                      [this, i] { Fire(script_.faults()[i]); })
                          .status());
    } else {
      counters_[{TargetKindOf(f.type), f.target}].faults.push_back(i);
    }
  }
  armed_ = true;
  return absl::OkStatus();
}

void FaultInjector::CountOperation(FaultTargetKind kind,
                                   absl::string_view name) {
  if (counters_.empty()) return;
  auto it = counters_.find(std::make_pair(kind, std::string(name)));
  if (it == counters_.end()) return;
  const int64_t count = ++it->second.count;
  // Copy: applying a fault may count further operations.
  const std::vector<size_t> candidates = it->second.faults;
  for (const size_t i : candidates) {
    const Fault& f = script_.faults()[i];
    if (f.trigger.operation == count) Fire(f);
  }
}

void FaultInjector::Fire(const Fault& fault) {
  fired_.push_back(Fired{engine_.now(), fault});
  const FaultTargetKind kind = TargetKindOf(fault.type);
  // Copy: a listener may add listeners.
  const std::vector<FaultListener*> listeners = listeners_;
  for (FaultListener* listener : listeners) {
    if (listener->OwnsTarget(kind, fault.target)) listener->ApplyFault(fault);
  }
}

}  // namespace simulator
