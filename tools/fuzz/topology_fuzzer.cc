// A topology file (text TopologyDef), as `--topology=FILE` reads it.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "simulator/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  (void)simulator::Topology::FromTextProto(input, "fuzz.textproto");
  return 0;
}
