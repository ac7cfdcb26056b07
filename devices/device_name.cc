#include "devices/device_name.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "devices/status_macros.h"

namespace devices {
namespace {

// Types that may be written without "/device:", as "/gpu:0" or "GPU:1".
bool IsShortFormType(absl::string_view upper) {
  return upper == "CPU" || upper == "GPU" || upper == "TPU";
}

// [A-Za-z][A-Za-z0-9_]*
bool IsIdentifier(absl::string_view s) {
  if (s.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

// Parses a non-negative decimal int made of digits only.
bool ParseIndex(absl::string_view s, int* out) {
  if (s.empty() || s.size() > 9) return false;  // 9 digits fit in an int.
  int value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

class Parser {
 public:
  explicit Parser(absl::string_view spec) : spec_(spec) {}

  absl::StatusOr<DeviceName> Parse() {
    for (absl::string_view segment : absl::StrSplit(spec_, '/')) {
      if (segment.empty()) continue;
      std::vector<absl::string_view> parts = absl::StrSplit(segment, ':');
      RETURN_IF_ERROR(ParseSegment(segment, parts));
    }
    return name_;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid device name '", spec_, "': ", what,
                     "; expected a name like "
                     "'/job:worker/replica:0/task:1/device:GPU:3', '/gpu:0' "
                     "or 'GPU:1'"));
  }

  absl::Status ParseSegment(absl::string_view segment,
                            const std::vector<absl::string_view>& parts) {
    const absl::string_view key = parts[0];
    if (key == "job" || key == "replica" || key == "task") {
      if (parts.size() != 2) {
        return Error(absl::StrCat("component '", segment, "' should be '", key,
                                  ":<value>'"));
      }
      if (key == "job") return SetJob(parts[1]);
      return SetIndex(key, parts[1],
                      key == "replica" ? &name_.replica : &name_.task);
    }
    if (key == "device") {
      if (parts.size() != 2 && parts.size() != 3) {
        return Error(absl::StrCat("component '", segment,
                                  "' should be 'device:<type>:<id>'"));
      }
      return SetDevice(segment, parts[1],
                       parts.size() == 3 ? parts[2] : absl::string_view("*"));
    }
    const std::string upper = absl::AsciiStrToUpper(key);
    if (IsShortFormType(upper) && parts.size() <= 2) {
      return SetDevice(segment, key,
                       parts.size() == 2 ? parts[1] : absl::string_view("*"));
    }
    return Error(absl::StrCat("unknown component '", segment,
                              "' (components are job, replica, task and "
                              "device)"));
  }

  absl::Status SetJob(absl::string_view job) {
    if (job == "*") return absl::OkStatus();
    if (!IsIdentifier(job)) {
      return Error(absl::StrCat("job name '", job,
                                "' must start with a letter and contain only "
                                "letters, digits and '_'"));
    }
    if (name_.job.has_value() && *name_.job != job) {
      return Error(
          absl::StrCat("conflicting jobs '", *name_.job, "' and '", job, "'"));
    }
    name_.job = std::string(job);
    return absl::OkStatus();
  }

  absl::Status SetIndex(absl::string_view key, absl::string_view text,
                        std::optional<int>* field) {
    if (text == "*") return absl::OkStatus();
    int value;
    if (!ParseIndex(text, &value)) {
      return Error(absl::StrCat(key, " '", text,
                                "' must be a non-negative integer or '*'"));
    }
    if (field->has_value() && **field != value) {
      return Error(
          absl::StrCat("conflicting ", key, "s ", **field, " and ", value));
    }
    *field = value;
    return absl::OkStatus();
  }

  absl::Status SetDevice(absl::string_view segment, absl::string_view type,
                         absl::string_view id) {
    if (!IsIdentifier(type)) {
      return Error(absl::StrCat("device type '", type, "' in '", segment,
                                "' must start with a letter and contain only "
                                "letters, digits and '_'"));
    }
    if (device_set_) {
      return Error(absl::StrCat("conflicting device components '",
                                device_segment_, "' and '", segment, "'"));
    }
    device_set_ = true;
    device_segment_ = std::string(segment);
    name_.type = absl::AsciiStrToUpper(type);
    return SetIndex("device id", id, &name_.id);
  }

  const absl::string_view spec_;
  DeviceName name_;
  bool device_set_ = false;
  std::string device_segment_;
};

}  // namespace

absl::StatusOr<DeviceName> DeviceName::Parse(absl::string_view spec) {
  return Parser(spec).Parse();
}

std::string DeviceName::ToString() const {
  std::string out;
  if (job.has_value()) absl::StrAppend(&out, "/job:", *job);
  if (replica.has_value()) absl::StrAppend(&out, "/replica:", *replica);
  if (task.has_value()) absl::StrAppend(&out, "/task:", *task);
  if (type.has_value()) {
    absl::StrAppend(&out, "/device:", *type, ":",
                    id.has_value() ? absl::StrCat(*id) : "*");
  }
  return out;
}

absl::Status DeviceName::Validate() const {
  if (job.has_value() && !IsIdentifier(*job)) {
    return absl::InvalidArgumentError(
        absl::StrCat("device name has invalid job '", *job,
                     "': it must start with a letter and contain only "
                     "letters, digits and '_'"));
  }
  if (replica.has_value() && *replica < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device name has negative replica ", *replica));
  }
  if (task.has_value() && *task < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device name has negative task ", *task));
  }
  if (type.has_value() &&
      (!IsIdentifier(*type) || absl::AsciiStrToUpper(*type) != *type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("device name has invalid type '", *type,
                     "': it must be upper case, start with a letter and "
                     "contain only letters, digits and '_'"));
  }
  if (id.has_value() && *id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device name has negative device id ", *id));
  }
  return absl::OkStatus();
}

absl::Status DeviceName::MergeFrom(const DeviceName& other) {
  RETURN_IF_ERROR(other.Validate());
  if (other.job.has_value()) job = other.job;
  if (other.replica.has_value()) replica = other.replica;
  if (other.task.has_value()) task = other.task;
  if (other.type.has_value()) type = other.type;
  if (other.id.has_value()) id = other.id;
  return absl::OkStatus();
}

bool DeviceName::IsCompleteName() const {
  return job.has_value() && replica.has_value() && task.has_value() &&
         type.has_value() && id.has_value();
}

bool DeviceName::Matches(const DeviceName& pattern) const {
  return (!pattern.job.has_value() || pattern.job == job) &&
         (!pattern.replica.has_value() || pattern.replica == replica) &&
         (!pattern.task.has_value() || pattern.task == task) &&
         (!pattern.type.has_value() || pattern.type == type) &&
         (!pattern.id.has_value() || pattern.id == id);
}

absl::StatusOr<std::string> DeviceName::Canonicalize(
    absl::string_view name, absl::string_view default_job_prefix) {
  DeviceName result;
  result.job = "localhost";
  result.replica = 0;
  result.task = 0;
  result.type = "CPU";
  result.id = 0;
  absl::StatusOr<DeviceName> defaults = Parse(default_job_prefix);
  if (!defaults.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad default job prefix: ", defaults.status().message()));
  }
  ASSIGN_OR_RETURN(DeviceName parsed, Parse(name));
  absl::Status merged = result.MergeFrom(*defaults);
  if (merged.ok()) merged = result.MergeFrom(parsed);
  RETURN_IF_ERROR(merged);
  return result.ToString();
}

}  // namespace devices
