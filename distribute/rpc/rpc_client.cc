#include "distribute/rpc/rpc_client.h"

#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "devices/status_macros.h"
#include "distribute/rpc/rpc_service.grpc.pb.h"
#include "distribute/rpc/rpc_service.pb.h"
#include "distribute/rpc/wire.h"
#include "distribute/server/internal/tensor_codec.h"
#include "grpcpp/grpcpp.h"

namespace distribute {
namespace rpc {
namespace rpc_internal {

// One call: what gRPC fills while it runs, then its outcome. `status` and
// `outputs` are written once, before `done` is notified, and only read
// after.
struct CallState {
  grpc::ClientContext context;
  CallRequest request;
  CallResponse response;
  std::string method;
  // Describe() of the client, for errors.
  std::string client;
  absl::Duration timeout;
  std::optional<std::vector<TensorSpec>> output_specs;

  absl::Notification done;
  absl::Status status;
  std::vector<devices::Tensor> outputs;

  void Finish(absl::Status s) {
    status = std::move(s);
    done.Notify();
  }
};

// The client's channel and stub.
struct ClientCore {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<RpcService::Stub> stub;
};

// The calls in flight, which the client cancels and waits for when it goes.
// A completion holds the registry, never the channel: gRPC (1.51) tears its
// callback threads down when the last channel that used them is destroyed,
// and that must not happen on one of those threads. So a completion lets its
// call go while it holds the registry's lock, and ~Client, which releases
// the client's channel only once the registry is empty, cannot destroy the
// channel before it.
struct CallRegistry {
  absl::Mutex mu;
  std::map<CallState*, std::shared_ptr<CallState>> in_flight
      ABSL_GUARDED_BY(mu);
};

}  // namespace rpc_internal

using rpc_internal::CallRegistry;
using rpc_internal::CallState;
using rpc_internal::ClientCore;

namespace {

// A finished result with `status`.
std::shared_ptr<CallState> Failed(absl::Status status) {
  auto state = std::make_shared<CallState>();
  state->Finish(std::move(status));
  return state;
}

std::string TimeoutText(absl::Duration timeout) {
  return timeout == absl::InfiniteDuration() ? std::string("no timeout")
                                             : absl::FormatDuration(timeout);
}

// The outcome of a call that gRPC has ended with `rpc`.
absl::Status Complete(const grpc::Status& rpc, CallState& state) {
  if (!rpc.ok()) {
    const auto code = static_cast<absl::StatusCode>(rpc.error_code());
    std::string hint;
    if (code == absl::StatusCode::kDeadlineExceeded) {
      hint = absl::StrCat(" (timeout ", TimeoutText(state.timeout),
                          "; the server may be down or unreachable, its TLS "
                          "settings may differ from the client's, or the "
                          "method is slow: check the address and TLS, or "
                          "raise CallOptions::timeout or "
                          "ClientOptions::timeout)");
    }
    return absl::Status(code, absl::StrCat("calling method \"", state.method,
                                           "\" on ", state.client, " failed: ",
                                           rpc.error_message(), hint));
  }
  const CallResponse& response = state.response;
  if (response.error_code() != 0) {
    // The method's own error, unchanged (a code outside absl's, from a
    // faulty server, as UNKNOWN).
    const int32_t code = response.error_code();
    return absl::Status(code > 0 && code <= 16
                            ? static_cast<absl::StatusCode>(code)
                            : absl::StatusCode::kUnknown,
                        response.error_message());
  }
  std::vector<devices::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(response.output_tensors_size()));
  for (int i = 0; i < response.output_tensors_size(); ++i) {
    ASSIGN_OR_RETURN(devices::Tensor output,
                     server_internal::TensorFromProto(
                         response.output_tensors(i),
                         absl::StrCat("output ", i, " of method \"",
                                      state.method, "\" from ", state.client)));
    outputs.push_back(std::move(output));
  }
  if (state.output_specs.has_value()) {
    RETURN_IF_ERROR(CheckCompatible(
        *state.output_specs, outputs,
        absl::StrCat("the outputs of method \"", state.method, "\" from ",
                     state.client, " do not match the expected output specs")));
  }
  state.outputs = std::move(outputs);
  return absl::OkStatus();
}

}  // namespace

bool StatusOrResult::is_ok() const { return get_error().ok(); }

absl::Status StatusOrResult::get_error() const {
  state_->done.WaitForNotification();
  return state_->status;
}

absl::StatusOr<std::vector<devices::Tensor>> StatusOrResult::get_value() const {
  state_->done.WaitForNotification();
  RETURN_IF_ERROR(state_->status);
  return state_->outputs;
}

bool StatusOrResult::WaitFor(absl::Duration timeout) const {
  return state_->done.WaitForNotificationWithTimeout(timeout);
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(
    absl::string_view rpc_layer, absl::string_view address,
    ClientOptions options) {
  RETURN_IF_ERROR(CheckRpcLayer(rpc_layer));
  ASSIGN_OR_RETURN(std::string parsed, ParseRpcAddress(address, "rpc client"));
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ClientOptions.timeout is ", absl::FormatDuration(options.timeout),
        "; it must be positive (absl::InfiniteDuration() for none)"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   CreateChannel(parsed, options.channel));
  auto core = std::make_unique<ClientCore>();
  core->channel = channel;
  core->stub = RpcService::NewStub(core->channel);

  const std::string client = absl::StrCat(
      "the rpc server at ", parsed,
      options.name.empty() ? std::string()
                           : absl::StrCat(" (client \"", options.name, "\")"));
  std::map<std::string, MethodSignature, std::less<>> methods;
  if (options.list_registered_methods) {
    grpc::ClientContext context;
    PrepareClientContext(options.channel, options.timeout, context);
    // Wait for a server that is still starting, as TF's client does.
    context.set_wait_for_ready(true);
    ListResponse listing;
    grpc::Status rpc = core->stub->List(&context, ListRequest(), &listing);
    if (rpc.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::DeadlineExceededError(absl::StrCat(
          client, " did not list its methods within ",
          TimeoutText(options.timeout),
          ": start the server before creating the client (or create the "
          "client with list_registered_methods = false), and check its "
          "address and that the client's TLS settings match the server's"));
    }
    if (!rpc.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(rpc.error_code()),
                          absl::StrCat("listing the methods of ", client,
                                       " failed: ", rpc.error_message()));
    }
    for (const RegisteredMethod& method : listing.registered_methods()) {
      MethodSignature signature;
      for (int i = 0; i < method.input_specs_size(); ++i) {
        ASSIGN_OR_RETURN(
            TensorSpec spec,
            SpecFromProto(
                method.input_specs(i),
                absl::StrCat("input spec ", i, " of method \"", method.method(),
                             "\" listed by ", client)));
        signature.input_specs.push_back(std::move(spec));
      }
      for (int i = 0; i < method.output_specs_size(); ++i) {
        ASSIGN_OR_RETURN(
            TensorSpec spec,
            SpecFromProto(
                method.output_specs(i),
                absl::StrCat("output spec ", i, " of method \"",
                             method.method(), "\" listed by ", client)));
        signature.output_specs.push_back(std::move(spec));
      }
      methods.emplace(method.method(), std::move(signature));
    }
  }
  return std::unique_ptr<Client>(new Client(std::move(parsed),
                                            std::move(options), std::move(core),
                                            std::move(methods)));
}

Client::Client(std::string address, ClientOptions options,
               std::unique_ptr<ClientCore> core,
               std::map<std::string, MethodSignature, std::less<>> methods)
    : address_(std::move(address)),
      options_(std::move(options)),
      core_(std::move(core)),
      calls_(std::make_shared<CallRegistry>()),
      methods_(std::move(methods)) {}

Client::~Client() {
  absl::MutexLock lock(&calls_->mu);
  for (auto& [raw, state] : calls_->in_flight) state->context.TryCancel();
  // A cancelled call completes at once.
  calls_->mu.Await(absl::Condition(
      +[](std::map<CallState*, std::shared_ptr<CallState>>* in_flight) {
        return in_flight->empty();
      },
      &calls_->in_flight));
}

std::string Client::Describe() const {
  return absl::StrCat("the rpc server at ", address_,
                      options_.name.empty()
                          ? std::string()
                          : absl::StrCat(" (client \"", options_.name, "\")"));
}

StatusOrResult Client::Call(absl::string_view method,
                            std::vector<devices::Tensor> args,
                            CallOptions options) {
  if (options.timeout < absl::ZeroDuration()) {
    return StatusOrResult(Failed(absl::InvalidArgumentError(absl::StrCat(
        "CallOptions.timeout of method \"", method, "\" is ",
        absl::FormatDuration(options.timeout),
        "; it must be positive, or zero for the client's timeout"))));
  }
  const absl::Duration timeout = options.timeout == absl::ZeroDuration()
                                     ? options_.timeout
                                     : options.timeout;
  if (options_.list_registered_methods) {
    auto it = methods_.find(method);
    if (it == methods_.end()) {
      // The listing is complete: a server registers every method before it
      // starts.
      std::string known;
      for (const auto& [name, signature] : methods_) {
        absl::StrAppend(&known, known.empty() ? "\"" : ", \"", name, "\"");
      }
      return StatusOrResult(Failed(absl::NotFoundError(absl::StrCat(
          "method \"", method, "\" is not registered on ", Describe(),
          " (it has ", known.empty() ? std::string("none") : known, ")"))));
    }
    absl::Status valid =
        CheckCompatible(it->second.input_specs, args,
                        absl::StrCat("the arguments of method \"", method,
                                     "\" on ", Describe()));
    if (!valid.ok()) return StatusOrResult(Failed(std::move(valid)));
    if (!options.output_specs.has_value()) {
      options.output_specs = it->second.output_specs;
    }
  }

  auto state = std::make_shared<CallState>();
  state->method = std::string(method);
  state->client = Describe();
  state->timeout = timeout;
  state->output_specs = std::move(options.output_specs);
  state->request.set_method(state->method);
  for (size_t i = 0; i < args.size(); ++i) {
    absl::Status encoded = server_internal::TensorToProto(
        args[i], absl::StrCat("argument ", i, " of method \"", method, "\""),
        *state->request.add_input_tensors());
    if (!encoded.ok()) return StatusOrResult(Failed(std::move(encoded)));
  }
  args.clear();
  const size_t bytes = state->request.ByteSizeLong();
  if (bytes > static_cast<size_t>(options_.channel.max_message_bytes)) {
    return StatusOrResult(Failed(absl::InvalidArgumentError(
        absl::StrCat("the arguments of method \"", method, "\" are ", bytes,
                     " bytes, more than max_message_bytes (",
                     options_.channel.max_message_bytes,
                     "); send less data or raise the bound on both sides"))));
  }
  PrepareClientContext(options_.channel, timeout, state->context);
  state->context.set_wait_for_ready(true);
  {
    absl::MutexLock lock(&calls_->mu);
    calls_->in_flight.emplace(state.get(), state);
  }
  CallState* const raw = state.get();
  std::shared_ptr<CallRegistry> calls = calls_;
  core_->stub->async()->Call(&raw->context, &raw->request, &raw->response,
                             [calls, raw](grpc::Status rpc) {
                               // `raw` is alive while it is in flight: the
                               // registry holds it.
                               raw->Finish(Complete(rpc, *raw));
                               absl::MutexLock lock(&calls->mu);
                               // May destroy the call (when its result is gone
                               // already), but never the channel: the client
                               // holds that until the registry is empty.
                               calls->in_flight.erase(raw);
                             });
  return StatusOrResult(std::move(state));
}

absl::StatusOr<std::vector<devices::Tensor>> Client::CallBlocking(
    absl::string_view method, std::vector<devices::Tensor> args,
    CallOptions options) {
  return Call(method, std::move(args), std::move(options)).get_value();
}

}  // namespace rpc
}  // namespace distribute
