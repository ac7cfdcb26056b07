// A serialized TPU topology (TF's TopologyProto) as a user hands it over:
// devices::TpuTopology::FromSerialized must refuse what is malformed without
// allocating more than the input implies, and what it accepts must
// serialize back to bytes that read as the same topology.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/tpu_topology.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<devices::TpuTopology> topology =
      devices::TpuTopology::FromSerialized(bytes);
  if (!topology.ok()) return 0;
  const std::string again = topology->Serialized();
  absl::StatusOr<devices::TpuTopology> back =
      devices::TpuTopology::FromSerialized(again);
  FUZZ_CHECK(back.ok(), "an accepted topology, serialized, is refused");
  FUZZ_CHECK(back->Serialized() == again, "a topology changed in a round trip");
  FUZZ_CHECK(back->num_tasks() == topology->num_tasks() &&
                 back->num_tpus_per_task() == topology->num_tpus_per_task() &&
                 back->mesh_shape() == topology->mesh_shape(),
             "the counts changed in a round trip");
  // Every core is found where the topology says it is.
  for (int t = 0; t < topology->num_tasks(); ++t) {
    for (int d = 0; d < topology->num_tpus_per_task(); ++d) {
      const devices::TpuCoordinates& c =
          topology->tasks()[t].tpus[d].coordinates;
      FUZZ_CHECK(*topology->TaskOrdinalAtCoordinates(c) == t &&
                     *topology->TpuDeviceOrdinalAtCoordinates(c) == d,
                 "core %d of task %d is not found at its coordinates", d, t);
    }
  }
  return 0;
}
