#include "distribute/cluster/json.h"

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace distribute {
namespace cluster {
namespace {

constexpr size_t kMaxDepth = 256;

// Why a parse stopped early (thrown out of nlohmann's parser callback, which
// has no other way to stop it).
struct Refusal {
  std::string message;
};

// Follows the parser's events to refuse repeated keys and deep nesting,
// naming where they are as a JSON pointer.
class StrictnessCheck {
 public:
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event,
                  Json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (frames_.size() >= kMaxDepth) {
          throw Refusal{absl::StrCat("nesting deeper than ", kMaxDepth,
                                     " levels at ", Pointer())};
        }
        frames_.push_back(Frame{event == Event::array_start, 0, "", {}});
        break;
      case Event::key: {
        Frame& top = frames_.back();
        std::string key = parsed.get<std::string>();
        if (!top.keys.insert(key).second) {
          throw Refusal{absl::StrCat("duplicate object key \"", key,
                                     "\" in the object at ", Pointer(),
                                     "; give each key once")};
        }
        top.key = std::move(key);
        break;
      }
      case Event::object_end:
      case Event::array_end:
        frames_.pop_back();
        ElementDone();
        break;
      case Event::value:
        ElementDone();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_array;
    int64_t index;    // arrays: elements done so far
    std::string key;  // objects: the member being read
    std::set<std::string> keys;
  };

  void ElementDone() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }

  // Where the innermost open container is ("/" for the top level).
  std::string Pointer() const {
    std::string out;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      absl::StrAppend(&out, "/", f.is_array ? absl::StrCat(f.index) : f.key);
    }
    return out.empty() ? "/" : out;
  }

  std::vector<Frame> frames_;
};

// nlohmann's message without its "[json.exception.parse_error.101] parse
// error at " prefix: "line 1, column 9: syntax error ...".
std::string Reason(const nlohmann::json::exception& e) {
  absl::string_view message = e.what();
  const size_t bracket = message.find("] ");
  if (absl::StartsWith(message, "[json.exception.") &&
      bracket != absl::string_view::npos) {
    message.remove_prefix(bracket + 2);
  }
  absl::ConsumePrefix(&message, "parse error at ");
  return std::string(message);
}

}  // namespace

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  try {
    StrictnessCheck check;
    return Json::parse(text.begin(), text.end(), std::ref(check));
  } catch (const Refusal& refusal) {
    return absl::InvalidArgumentError(refusal.message);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(Reason(e));
  }
}

absl::string_view JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    case Json::value_t::binary:
      return "binary";
  }
  return "unknown";
}

std::optional<int64_t> JsonInt(const Json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    // [-2^63, 2^63): the doubles that convert to int64 exactly.
    if (!std::isfinite(d) || d != std::floor(d) || d < -0x1p63 || d >= 0x1p63) {
      return std::nullopt;
    }
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

const Json* JsonMember(const Json& object, absl::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false,
                    Json::error_handler_t::replace);
}

}  // namespace cluster
}  // namespace distribute
