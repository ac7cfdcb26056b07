// TF_CONFIG's value, as every task of a multi-worker job reads it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "distribute/cluster/tf_config_cluster_resolver.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using distribute::cluster::TFConfigClusterResolver;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  auto resolver = TFConfigClusterResolver::FromJson(input);
  if (!resolver.ok()) return 0;
  auto spec = (*resolver)->cluster_spec();
  FUZZ_CHECK(spec.ok(), "an accepted TF_CONFIG without a cluster spec");
  (void)(*resolver)->task_type();
  (void)(*resolver)->task_id();
  (void)(*resolver)->rpc_layer();
  (void)(*resolver)->environment();
  (void)(*resolver)->master();
  for (const std::string& job : spec->jobs()) {
    auto indices = spec->task_indices(job);
    if (indices.ok() && !indices->empty()) {
      (void)(*resolver)->master(job, indices->front());
    }
  }
  return 0;
}
