// A tensor as it arrives from another task over gRPC (TensorProto bytes).
// An accepted tensor encodes back to a proto that decodes to the same
// tensor.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "devices/tensor.h"
#include "distribute/server/internal/tensor_codec.h"
#include "distribute/server/worker_service.pb.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace si = distribute::server_internal;
  distribute::server::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto tensor = si::TensorFromProto(proto, "fuzz");
  if (!tensor.ok()) return 0;
  distribute::server::TensorProto again;
  FUZZ_CHECK(si::TensorToProto(*tensor, "fuzz", again).ok(), "re-encode");
  auto back = si::TensorFromProto(again, "fuzz");
  FUZZ_CHECK(back.ok(), "the re-encoded tensor is refused");
  FUZZ_CHECK(back->SameShapeAndType(*tensor), "shape or dtype changed");
  FUZZ_CHECK(back->bytes() == tensor->bytes() &&
                 (tensor->bytes() == 0 ||
                  std::memcmp(back->raw_data(), tensor->raw_data(),
                              tensor->bytes()) == 0),
             "data changed");
  return 0;
}
