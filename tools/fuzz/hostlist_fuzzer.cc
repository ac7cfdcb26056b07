// Slurm's hostlist and tasks-per-node syntax (SLURM_STEP_NODELIST,
// SLURM_STEP_TASKS_PER_NODE). Input: the hostlist, a newline, the
// tasks-per-node list.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "distribute/cluster/slurm_hostlist.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const absl::string_view hostlist = input.substr(0, newline);
  const absl::string_view tasks = newline == absl::string_view::npos
                                      ? absl::string_view()
                                      : input.substr(newline + 1);
  namespace cluster = distribute::cluster;
  auto hosts = cluster::ExpandHostlist(hostlist);
  if (hosts.ok()) {
    FUZZ_CHECK(!hosts->empty(), "an accepted hostlist names no host");
    FUZZ_CHECK(
        static_cast<int64_t>(hosts->size()) <= cluster::kMaxExpandedHosts,
        "%zu hosts", hosts->size());
    for (const std::string& host : *hosts) {
      FUZZ_CHECK(!host.empty(), "an empty host name");
    }
  }
  auto counts = cluster::ExpandTasksPerNode(tasks);
  if (counts.ok()) {
    FUZZ_CHECK(!counts->empty(), "an accepted list names no node");
    FUZZ_CHECK(
        static_cast<int64_t>(counts->size()) <= cluster::kMaxExpandedHosts,
        "%zu nodes", counts->size());
    for (int64_t count : *counts) FUZZ_CHECK(count >= 0, "count %ld", count);
  }
  return 0;
}
