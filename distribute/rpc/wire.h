// What rpc::Server and rpc::Client share: the wire form of TensorSpec
// (rpc_service.proto's TensorSpecProto) and the form of an address.
#ifndef DISTRIBUTE_RPC_WIRE_H_
#define DISTRIBUTE_RPC_WIRE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distribute/rpc/rpc_service.pb.h"
#include "distribute/tensor_spec.h"

namespace distribute {
namespace rpc {

void SpecToProto(const TensorSpec& spec, TensorSpecProto& proto);

// OK for "grpc", the only rpc_layer (as in TF); INVALID_ARGUMENT otherwise.
absl::Status CheckRpcLayer(absl::string_view rpc_layer);

// "host:port" with a numeric port (0 to 65535), a leading "grpc://"
// stripped. INVALID_ARGUMENT naming `who` ("rpc server", "rpc client") and
// the address otherwise.
absl::StatusOr<std::string> ParseRpcAddress(absl::string_view address,
                                            absl::string_view who);

// INVALID_ARGUMENT starting with `what` for an unknown dtype or a bad
// dimension.
absl::StatusOr<TensorSpec> SpecFromProto(const TensorSpecProto& proto,
                                         absl::string_view what);

}  // namespace rpc
}  // namespace distribute

#endif  // DISTRIBUTE_RPC_WIRE_H_
