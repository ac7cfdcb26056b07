#include "distribute/rpc/rpc_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "distribute/rpc/rpc_service.grpc.pb.h"
#include "distribute/rpc/rpc_service.pb.h"
#include "distribute/rpc/wire.h"
#include "distribute/server/internal/grpc_status.h"
#include "distribute/server/internal/server_security.h"
#include "distribute/server/internal/tensor_codec.h"
#include "grpcpp/grpcpp.h"

namespace distribute {
namespace rpc {

// The RpcService's handlers over the registered methods. Methods are added
// only before the server starts, so calls read them under a shared lock that
// no call holds while a method runs.
class Server::Service final : public RpcService::Service {
 public:
  explicit Service(std::optional<std::string> token)
      : token_(std::move(token)) {}

  absl::Status Add(absl::string_view name, MethodWithContext method,
                   MethodSignature signature) {
    absl::MutexLock lock(&mu_);
    if (methods_.count(name) != 0) {
      return absl::AlreadyExistsError(
          absl::StrCat("method \"", name,
                       "\" is already registered on this rpc server; register "
                       "each method under a name of its own"));
    }
    methods_.emplace(std::string(name),
                     std::make_shared<const Entry>(
                         Entry{std::move(method), std::move(signature)}));
    return absl::OkStatus();
  }

  std::vector<std::string> names() const {
    absl::ReaderMutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& [name, entry] : methods_) out.push_back(name);
    return out;
  }

  grpc::Status Call(grpc::ServerContext* context, const CallRequest* request,
                    CallResponse* response) override {
    absl::Status admitted = CheckToken(*context);
    if (!admitted.ok()) return server_internal::ToGrpcStatus(admitted);
    const std::string& name = request->method();
    std::shared_ptr<const Entry> entry;
    {
      absl::ReaderMutexLock lock(&mu_);
      auto it = methods_.find(name);
      if (it == methods_.end()) {
        std::vector<std::string> known;
        for (const auto& [n, e] : methods_) known.push_back(n);
        return server_internal::ToGrpcStatus(absl::NotFoundError(absl::StrCat(
            "method \"", name,
            "\" is not registered on this rpc server (it has ",
            known.empty()
                ? std::string("none")
                : absl::StrCat("\"", absl::StrJoin(known, "\", \""), "\""),
            ")")));
      }
      entry = it->second;
    }
    std::vector<devices::Tensor> args;
    args.reserve(static_cast<size_t>(request->input_tensors_size()));
    for (int i = 0; i < request->input_tensors_size(); ++i) {
      absl::StatusOr<devices::Tensor> arg = server_internal::TensorFromProto(
          request->input_tensors(i),
          absl::StrCat("argument ", i, " of method \"", name, "\""));
      if (!arg.ok()) return server_internal::ToGrpcStatus(arg.status());
      args.push_back(*std::move(arg));
    }
    absl::Status valid =
        CheckCompatible(entry->signature.input_specs, args,
                        absl::StrCat("the arguments of method \"", name, "\""));
    if (!valid.ok()) return server_internal::ToGrpcStatus(valid);

    const GrpcCallContext call(*context);
    absl::StatusOr<std::vector<devices::Tensor>> outputs =
        entry->method(std::move(args), call);
    if (!outputs.ok()) {
      response->set_error_code(static_cast<int32_t>(outputs.status().code()));
      response->set_error_message(std::string(outputs.status().message()));
      return grpc::Status::OK;
    }
    absl::Status declared = CheckCompatible(
        entry->signature.output_specs, *outputs,
        absl::StrCat("the outputs of method \"", name,
                     "\" (a bug in the method or in its declared output "
                     "specs)"));
    if (!declared.ok()) {
      return server_internal::ToGrpcStatus(
          absl::InternalError(declared.message()));
    }
    for (size_t i = 0; i < outputs->size(); ++i) {
      absl::Status encoded = server_internal::TensorToProto(
          (*outputs)[i],
          absl::StrCat("output ", i, " of method \"", name, "\""),
          *response->add_output_tensors());
      if (!encoded.ok()) {
        response->Clear();
        return server_internal::ToGrpcStatus(
            absl::InternalError(encoded.message()));
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status List(grpc::ServerContext* context, const ListRequest*,
                    ListResponse* response) override {
    absl::Status admitted = CheckToken(*context);
    if (!admitted.ok()) return server_internal::ToGrpcStatus(admitted);
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [name, entry] : methods_) {
      RegisteredMethod* method = response->add_registered_methods();
      method->set_method(name);
      for (const TensorSpec& spec : entry->signature.input_specs) {
        SpecToProto(spec, *method->add_input_specs());
      }
      for (const TensorSpec& spec : entry->signature.output_specs) {
        SpecToProto(spec, *method->add_output_specs());
      }
    }
    return grpc::Status::OK;
  }

 private:
  // CallContext over a gRPC call.
  class GrpcCallContext final : public CallContext {
   public:
    explicit GrpcCallContext(const grpc::ServerContext& context)
        : context_(context) {}
    bool IsCancelled() const override { return context_.IsCancelled(); }
    absl::Time deadline() const override {
      const auto d = context_.deadline();
      if (d == std::chrono::system_clock::time_point::max()) {
        return absl::InfiniteFuture();
      }
      return absl::FromChrono(d);
    }

   private:
    const grpc::ServerContext& context_;
  };

  // OK when the server wants no token or the call carries it;
  // UNAUTHENTICATED saying which, never echoing a token.
  absl::Status CheckToken(const grpc::ServerContext& context) const {
    if (!token_.has_value()) return absl::OkStatus();
    const auto& metadata = context.client_metadata();
    auto it = metadata.find(kClusterTokenMetadataKey);
    if (it == metadata.end()) {
      return absl::UnauthenticatedError(
          "this rpc server requires a token and the call carries none: give "
          "the client the server's token (ClientOptions::channel."
          "cluster_token)");
    }
    if (!server_internal::TokensMatch(
            absl::string_view(it->second.data(), it->second.size()), *token_)) {
      return absl::UnauthenticatedError(
          "the call's token is not this rpc server's (ServerOptions::token)");
    }
    return absl::OkStatus();
  }

  struct Entry {
    MethodWithContext method;
    MethodSignature signature;
  };

  const std::optional<std::string> token_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const Entry>, std::less<>> methods_
      ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    absl::string_view rpc_layer, absl::string_view address,
    ServerOptions options) {
  RETURN_IF_ERROR(CheckRpcLayer(rpc_layer));
  ASSIGN_OR_RETURN(std::string parsed, ParseRpcAddress(address, "rpc server"));
  if (options.max_message_bytes < 1 ||
      options.max_message_bytes > int64_t{2147483647}) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ServerOptions.max_message_bytes is ", options.max_message_bytes,
        "; it must be in [1, 2^31 - 1]"));
  }
  if (options.token.has_value() && options.token->empty()) {
    return absl::InvalidArgumentError(
        "ServerOptions.token is set but empty; leave it unset for no token");
  }
  RETURN_IF_ERROR(ValidateKeepalive(options.keepalive));
  InitGrpcForProcess();
  return std::unique_ptr<Server>(
      new Server(std::move(parsed), std::move(options)));
}

Server::Server(std::string address, ServerOptions options)
    : options_(std::move(options)),
      service_(std::make_unique<Service>(options_.token)),
      address_(std::move(address)) {}

Server::~Server() { Stop(); }

absl::Status Server::Register(absl::string_view name, Method method,
                              MethodSignature signature) {
  if (!method) return Register(name, MethodWithContext(), std::move(signature));
  return Register(
      name,
      [method = std::move(method)](std::vector<devices::Tensor> args,
                                   const CallContext&) {
        return method(std::move(args));
      },
      std::move(signature));
}

absl::Status Server::Register(absl::string_view name, MethodWithContext method,
                              MethodSignature signature) {
  if (name.empty()) {
    return absl::InvalidArgumentError("a method needs a non-empty name");
  }
  if (!method) {
    return absl::InvalidArgumentError(
        absl::StrCat("method \"", name, "\" has no function"));
  }
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot register method \"", name, "\": the rpc server has ",
        stopped_ ? "stopped" : "started",
        ", and every method must be registered before Start() (as in TF)"));
  }
  return service_->Add(name, std::move(method), std::move(signature));
}

absl::Status Server::Start() {
  absl::MutexLock lock(&mu_);
  if (stopped_) {
    return absl::FailedPreconditionError(
        absl::StrCat("the rpc server at ", address_,
                     " was stopped; a stopped server cannot be restarted "
                     "(create a new one)"));
  }
  if (started_) return absl::OkStatus();
  grpc::ServerBuilder builder;
  int port = 0;
  RETURN_IF_ERROR(server_internal::ConfigureServerBuilder(
      builder, address_, options_.tls, &port, options_.max_message_bytes,
      options_.keepalive));

  builder.RegisterService(service_.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "the rpc server cannot listen on ", address_,
        ": the port may be in use, or the host is not an address of this "
        "machine"));
  }
  address_ = server_internal::WithPort(address_, port);
  grpc_server_ = std::move(server);
  started_ = true;
  return absl::OkStatus();
}

void Server::Stop() {
  std::unique_ptr<grpc::Server> server;
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    first = !stopped_;
    stopped_ = true;
    server = std::move(grpc_server_);
  }
  if (!first) {
    // Another call stops (or stopped) the server: return once it has, so
    // that the caller may destroy the server.
    stopped_notification_.WaitForNotification();
    return;
  }
  if (server != nullptr) {
    // Calls still running after the grace are cancelled.
    server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Milliseconds(200)));
    server->Wait();
  }
  stopped_notification_.Notify();
}

std::string Server::target() const {
  absl::MutexLock lock(&mu_);
  return address_;
}

std::vector<std::string> Server::registered_methods() const {
  return service_->names();
}

}  // namespace rpc
}  // namespace distribute
