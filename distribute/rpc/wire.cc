#include "distribute/rpc/wire.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "devices/dtype.h"
#include "distribute/rpc/rpc_server.h"
#include "distribute/server/channel.h"

namespace distribute {
namespace rpc {

absl::Status CheckRpcLayer(absl::string_view rpc_layer) {
  if (rpc_layer == kGrpcRpcLayer) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("rpc_layer \"", rpc_layer,
                   "\" is not supported: only \"grpc\" is, as in TF"));
}

absl::StatusOr<std::string> ParseRpcAddress(absl::string_view address,
                                            absl::string_view who) {
  const absl::string_view stripped = StripGrpcScheme(address);
  const size_t colon = stripped.rfind(':');
  bool valid = colon != absl::string_view::npos && colon != 0;
  if (valid) {
    const absl::string_view host = stripped.substr(0, colon);
    const absl::string_view digits = stripped.substr(colon + 1);
    // An IPv6 host is bracketed ("[::1]:80"); the port is 1 to 5 digits.
    const bool v6 = absl::StrContains(host, ':');
    valid = (!v6 ||
             (host.size() > 2 && host.front() == '[' && host.back() == ']')) &&
            !digits.empty() && digits.size() <= 5 &&
            std::all_of(digits.begin(), digits.end(),
                        [](char c) { return c >= '0' && c <= '9'; });
    int port = 0;
    valid = valid && absl::SimpleAtoi(digits, &port) && port <= 65535;
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, " address \"", address,
        "\" is not \"host:port\" (e.g. \"127.0.0.1:2300\" or \"[::1]:2300\"; a "
        "server may give port 0 for any free port)"));
  }
  return std::string(stripped);
}

void SpecToProto(const TensorSpec& spec, TensorSpecProto& proto) {
  proto.set_dtype(std::string(devices::DTypeName(spec.dtype())));
  proto.set_unknown_rank(!spec.has_known_rank());
  for (int64_t d : spec.dims()) proto.add_dims(d);
}

absl::StatusOr<TensorSpec> SpecFromProto(const TensorSpecProto& proto,
                                         absl::string_view what) {
  absl::StatusOr<devices::DType> dtype = devices::ParseDType(proto.dtype());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", dtype.status().message()));
  }
  if (proto.unknown_rank()) {
    if (proto.dims_size() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": a spec of unknown rank lists ",
                       proto.dims_size(), " dimensions"));
    }
    return TensorSpec::UnknownRank(*dtype);
  }
  absl::StatusOr<TensorSpec> spec = TensorSpec::Make(
      *dtype, std::vector<int64_t>(proto.dims().begin(), proto.dims().end()));
  if (!spec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", spec.status().message()));
  }
  return spec;
}

}  // namespace rpc
}  // namespace distribute
