#include "distribute/rpc/wire.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "devices/dtype.h"
#include "distribute/server/channel.h"

namespace distribute {
namespace rpc {

absl::StatusOr<std::string> ParseRpcAddress(absl::string_view address,
                                            absl::string_view who) {
  const absl::string_view stripped = StripGrpcScheme(address);
  const size_t colon = stripped.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(stripped.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, " address \"", address,
        "\" is not \"host:port\" (e.g. \"127.0.0.1:2300\"; a server may give "
        "port 0 for any free port)"));
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
  if (proto.unknown_rank()) return TensorSpec::UnknownRank(*dtype);
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
