// Strict JSON (RFC 8259) for configuration such as TF_CONFIG and for the
// tools' JSON output, on JSON for Modern C++ (Debian's nlohmann-json3-dev).
// Objects keep document order (nlohmann::ordered_json).
//
// Example:
//   absl::StatusOr<Json> v = ParseJson(R"({"task": {"index": 1}})");
//   const Json* task = JsonMember(*v, "task");
//   std::optional<int64_t> index = JsonInt(*JsonMember(*task, "index"));  // 1
//
//   ParseJson("{\"a\": 1,}") -> INVALID_ARGUMENT
//       "line 1, column 9: syntax error while parsing object key - ..."
//
//   Json row = {{"op", "all_reduce"}, {"time_us", 12.5}};
//   DumpJson(row) -> {"op":"all_reduce","time_us":12.5}
#ifndef DISTRIBUTE_CLUSTER_JSON_H_
#define DISTRIBUTE_CLUSTER_JSON_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace distribute {
namespace cluster {

using Json = nlohmann::ordered_json;

// Parses one JSON value (surrounded by optional whitespace). INVALID_ARGUMENT
// for malformed text ("line L, column C: ..." with 1-based positions) or
// trailing content, for a key repeated in one object (naming the key and
// where the object is, as a JSON pointer such as /cluster/worker) and for
// nesting deeper than 256 levels. Never throws.
absl::StatusOr<Json> ParseJson(absl::string_view text);

// "null", "boolean", "number", "string", "array" or "object".
absl::string_view JsonTypeName(const Json& value);

// The exact value of a number that is a whole number within int64 (1, -3,
// 2.0, 1e3); nullopt for fractions, out-of-range numbers and non-numbers.
std::optional<int64_t> JsonInt(const Json& value);

// The member `key` of an object, or nullptr when absent or not an object.
const Json* JsonMember(const Json& object, absl::string_view key);

// `value` as compact JSON text. Non-finite numbers are written as null and
// bytes that are not UTF-8 as U+FFFD (the text is always valid JSON). Never
// throws.
std::string DumpJson(const Json& value);

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_JSON_H_
