// A built-in topology's name with its options, as `--topology=` and
// `--platform=sim:` take it ("dgx_h100_cluster:4,nics=4,fabric=roce",
// "tpu_v4:4x4x8").
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "simulator/builtin_topologies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  (void)simulator::BuiltinTopology(input);
  return 0;
}
