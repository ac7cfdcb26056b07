// Expansion of Slurm's compressed host lists and task-per-node counts, as
// found in SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE (what
// `scontrol show hostnames` prints, without running scontrol).
//
// Example:
//   ExpandHostlist("t02n[13,41-43]");
//     // {"t02n13", "t02n41", "t02n42", "t02n43"}
//   ExpandHostlist("n[001-003]");          // {"n001", "n002", "n003"}
//   ExpandHostlist("a[1-2]b[3-4]");        // {"a1b3", "a1b4", "a2b3", "a2b4"}
//   ExpandHostlist("host1,rack[1-2]n[01-02]");
//     // {"host1", "rack1n01", "rack1n02", "rack2n01", "rack2n02"}
//   ExpandTasksPerNode("2(x3),1");         // {2, 2, 2, 1}
#ifndef DISTRIBUTE_CLUSTER_SLURM_HOSTLIST_H_
#define DISTRIBUTE_CLUSTER_SLURM_HOSTLIST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {
namespace cluster {

// The most hosts one host list may expand to, and the most bytes their
// names may take together (long names multiplied by bracket groups would
// otherwise take gigabytes at fewer hosts).
inline constexpr int64_t kMaxExpandedHosts = int64_t{1} << 20;
inline constexpr int64_t kMaxExpandedBytes = int64_t{64} << 20;

// Expands a Slurm host list, keeping its order and repeats. A list is
// comma-separated entries; an entry is literal text with any number of
// bracket groups "[...]", each a comma-separated list of numbers "7" and
// ranges "1-3". Several groups multiply, the leftmost varying slowest. A
// range keeps the zero padding of its lower bound ("[08-10]" -> 08, 09, 10).
// Surrounding whitespace is ignored.
//
// INVALID_ARGUMENT, quoting the list and the position, for: an empty list or
// entry, an unbalanced or nested bracket, an empty group or group item, a
// bound that is not a decimal number, a reversed range ("[5-3]"), or an
// expansion to more than kMaxExpandedHosts hosts or kMaxExpandedBytes bytes
// of names.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(
    absl::string_view hostlist);

// Expands Slurm's tasks-per-node list: comma-separated "N" (one node with N
// tasks) or "N(xR)" (R nodes with N tasks each), in node order.
// INVALID_ARGUMENT for an empty list, a malformed entry or a repeat of 0.
absl::StatusOr<std::vector<int64_t>> ExpandTasksPerNode(
    absl::string_view tasks_per_node);

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_SLURM_HOSTLIST_H_
