// A cluster spec as JSON ({"worker": ["h:1", ...], "ps": {"3": "h:2"}}),
// as TF_CONFIG's "cluster" and --cluster_spec carry it. An accepted spec
// must survive every accessor and round-trip through ToJson.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "distribute/cluster/cluster_spec.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using distribute::cluster::ClusterSpec;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  auto spec = ClusterSpec::FromJson(input);
  if (!spec.ok()) return 0;
  int64_t total = 0;
  for (const std::string& job : spec->jobs()) {
    FUZZ_CHECK(spec->has_job(job), "job %s", job.c_str());
    auto n = spec->num_tasks(job);
    FUZZ_CHECK(n.ok(), "num_tasks(%s)", job.c_str());
    total += *n;
    auto indices = spec->task_indices(job);
    FUZZ_CHECK(indices.ok() && static_cast<int64_t>(indices->size()) == *n,
               "task_indices(%s)", job.c_str());
    for (int64_t index : *indices) {
      FUZZ_CHECK(spec->task_address(job, index).ok(), "%s:%ld", job.c_str(),
                 index);
    }
    auto tasks = spec->job_tasks(job);
    if (tasks.ok()) {
      FUZZ_CHECK(spec->is_dense(job) || tasks->size() >= indices->size(),
                 "job_tasks(%s)", job.c_str());
    }
  }
  FUZZ_CHECK(total == spec->total_tasks(), "total_tasks %ld vs %ld", total,
             spec->total_tasks());
  const std::string json = spec->ToJson();
  auto again = ClusterSpec::FromJson(json);
  FUZZ_CHECK(again.ok(), "ToJson gave %s, which FromJson refuses: %s",
             json.c_str(), std::string(again.status().message()).c_str());
  FUZZ_CHECK(again->ToJson() == json, "round trip changed %s", json.c_str());
  FUZZ_CHECK(again->Fingerprint() == spec->Fingerprint(), "fingerprint");
  (void)spec->DebugString();
  return 0;
}
