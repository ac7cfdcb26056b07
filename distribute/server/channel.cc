#include "distribute/server/channel.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "devices/status_macros.h"
#include "grpc/grpc.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace distribute {

void InitGrpcForProcess() {
  static const bool initialized = [] {
    grpc_init();
    return true;
  }();
  (void)initialized;
}

absl::string_view StripGrpcScheme(absl::string_view target) {
  absl::ConsumePrefix(&target, "grpc://");
  return target;
}

namespace {

// The contents of `path`; INVALID_ARGUMENT naming `what` and the path, with
// `hint` when it cannot be opened.
absl::StatusOr<std::string> ReadWholeFile(absl::string_view what,
                                          const std::string& path,
                                          absl::string_view hint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read the ", what, " file \"", path,
                     "\": it is missing or unreadable", hint));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("reading the ", what, " file \"", path, "\" failed"));
  }
  return contents.str();
}

}  // namespace

absl::StatusOr<std::string> ReadClusterTokenFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string token, ReadWholeFile("cluster token", path, ""));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) {
    token.pop_back();
  }
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the cluster token file \"", path,
        "\" holds no token; write the cluster's shared secret into it"));
  }
  return token;
}

absl::StatusOr<std::string> ReadPemFile(absl::string_view what,
                                        const std::string& path) {
  return ReadWholeFile(what, path, "; check the TLS options' paths");
}

const std::vector<IntChannelArg>& BulkTransferChannelArgs() {
  static const auto* const kArgs = new std::vector<IntChannelArg>{
      {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20},
      {GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1},
      {GRPC_ARG_HTTP2_BDP_PROBE, 1},
      {GRPC_ARG_TCP_READ_CHUNK_SIZE, 1 << 20},
      {GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 64 << 10},
      {GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 8 << 20},
  };
  return *kArgs;
}

absl::Status ValidateKeepalive(const KeepaliveOptions& keepalive) {
  const absl::Duration kMax =
      absl::Milliseconds(std::numeric_limits<int>::max());
  if (keepalive.time <= absl::ZeroDuration() ||
      (keepalive.time != absl::InfiniteDuration() && keepalive.time > kMax)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "keepalive.time is ", absl::FormatDuration(keepalive.time),
        "; it must be positive and at most ", absl::FormatDuration(kMax),
        ", or infinite to turn keepalive off"));
  }
  if (keepalive.timeout <= absl::ZeroDuration() || keepalive.timeout > kMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "keepalive.timeout is ", absl::FormatDuration(keepalive.timeout),
        "; it must be positive and at most ", absl::FormatDuration(kMax)));
  }
  return absl::OkStatus();
}

std::vector<IntChannelArg> KeepaliveChannelArgs(
    const KeepaliveOptions& keepalive) {
  std::vector<IntChannelArg> args = {
      {GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0},
      {GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0},
  };
  if (keepalive.time != absl::InfiniteDuration()) {
    // Whole milliseconds, at least one.
    const auto ms = [](absl::Duration d) {
      return static_cast<int>(
          std::max<int64_t>(1, absl::ToInt64Milliseconds(d)));
    };
    args.push_back({GRPC_ARG_KEEPALIVE_TIME_MS, ms(keepalive.time)});
    args.push_back({GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ms(keepalive.timeout)});
  }
  return args;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    absl::string_view target, const ChannelOptions& options) {
  InitGrpcForProcess();
  const absl::string_view address = StripGrpcScheme(target);
  if (address.empty()) {
    return absl::InvalidArgumentError(
        "cannot create a channel to an empty target; give \"host:port\"");
  }
  if (options.max_message_bytes < 1 ||
      options.max_message_bytes > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_message_bytes is ", options.max_message_bytes,
        "; it must be in [1, ", std::numeric_limits<int>::max(), "]"));
  }
  absl::Status keepalive = ValidateKeepalive(options.keepalive);
  RETURN_IF_ERROR(keepalive);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  for (const IntChannelArg& arg : BulkTransferChannelArgs()) {
    args.SetInt(arg.name, arg.value);
  }
  for (const IntChannelArg& arg : KeepaliveChannelArgs(options.keepalive)) {
    args.SetInt(arg.name, arg.value);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls.enabled()) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls.ca_file.empty()) {
      ASSIGN_OR_RETURN(std::string ca,
                       ReadPemFile("CA certificate", options.tls.ca_file));
      ssl.pem_root_certs = std::move(ca);
    }
    if (options.tls.cert_file.empty() != options.tls.key_file.empty()) {
      return absl::InvalidArgumentError(
          "TLS needs both cert_file and key_file for a client certificate, "
          "or neither");
    }
    if (!options.tls.cert_file.empty()) {
      ASSIGN_OR_RETURN(std::string cert,
                       ReadPemFile("certificate", options.tls.cert_file));
      ASSIGN_OR_RETURN(std::string key,
                       ReadPemFile("private key", options.tls.key_file));
      ssl.pem_cert_chain = std::move(cert);
      ssl.pem_private_key = std::move(key);
    }
    if (!options.tls.target_name_override.empty()) {
      args.SetSslTargetNameOverride(options.tls.target_name_override);
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  return grpc::CreateCustomChannel(std::string(address), credentials, args);
}

void PrepareClientContext(const ChannelOptions& options, absl::Duration timeout,
                          grpc::ClientContext& context) {
  if (options.cluster_token.has_value()) {
    context.AddMetadata(kClusterTokenMetadataKey, *options.cluster_token);
  }
  if (!options.caller_task.empty()) {
    context.AddMetadata(kCallerTaskMetadataKey, options.caller_task);
  }
  if (!options.cluster_fingerprint.empty()) {
    context.AddMetadata(kClusterFingerprintMetadataKey,
                        options.cluster_fingerprint);
  }
  if (timeout != absl::InfiniteDuration()) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
}

}  // namespace distribute
