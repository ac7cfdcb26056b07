// rpc::Client, as tf.distribute.experimental.rpc.Client: calls the methods
// of an rpc::Server (rpc_server.h) in another process. Calls are
// asynchronous: Call() returns a StatusOrResult at once, whose accessors
// block until the call ends (TF's call / <method>); CallBlocking() waits
// (TF's <method>_blocking).
//
// Created with list_registered_methods (the default, as TF's eager clients),
// the client asks the server for its methods and their specs first, and then
// checks every call's arguments and the outputs against them: a bad call
// fails before anything is sent.
//
// Example:
//   absl::StatusOr<std::unique_ptr<distribute::rpc::Client>> client =
//       distribute::rpc::Client::Create("grpc", server->target());
//   distribute::rpc::StatusOrResult result = (*client)->Call(
//       "add", {*devices::Tensor::FromVector<int32_t>({2}, devices::Shape()),
//               *devices::Tensor::FromVector<int32_t>({3}, devices::Shape())});
//   if (result.is_ok()) {
//     std::vector<devices::Tensor> sum = *result.get_value();   // {5}
//   }
#ifndef DISTRIBUTE_RPC_RPC_CLIENT_H_
#define DISTRIBUTE_RPC_RPC_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/rpc/rpc_server.h"
#include "distribute/server/channel.h"
#include "distribute/tensor_spec.h"

namespace distribute {
namespace rpc {

struct ClientOptions {
  // A label for the client in its errors (TF's `name`).
  std::string name;
  // Every call's deadline unless the call gives its own (TF's
  // timeout_in_ms). TF's default is none; ours is finite so that no call
  // blocks for ever: absl::InfiniteDuration() for none. Create() waits this
  // long for the server to answer the listing.
  absl::Duration timeout = absl::Seconds(60);
  // Ask the server for its methods and specs at Create() (the server must
  // be started by then), and check calls against them.
  bool list_registered_methods = true;
  // The token the server expects, TLS, the message bound and keepalive.
  ChannelOptions channel;
};

struct CallOptions {
  // This call's deadline; zero takes ClientOptions::timeout.
  absl::Duration timeout = absl::ZeroDuration();
  // The outputs to expect (TF's output_specs). When unset, a listing
  // client expects the method's listed output specs, and any other client
  // takes what comes.
  std::optional<std::vector<TensorSpec>> output_specs;
};

namespace rpc_internal {
struct CallState;
struct CallRegistry;
struct ClientCore;
}  // namespace rpc_internal

// The outcome of a call, once it ends. Copies share the call; a moved-from
// result may only be destroyed or assigned to.
class StatusOrResult {
 public:
  // Whether the call succeeded. Blocks until the call ends.
  bool is_ok() const;
  // The call's error, or OK. Blocks until the call ends. The method's own
  // errors come back with their code and message unchanged; otherwise, each
  // naming the method and server: DEADLINE_EXCEEDED past the timeout, which
  // is also what a server that cannot be reached gives (calls wait for it
  // to come up, as TF's), as does a TLS mismatch; CANCELLED when the client
  // was destroyed under the call; UNAVAILABLE when the server stopped under
  // it; UNAUTHENTICATED without the server's token; NOT_FOUND for a method
  // the server lacks; INVALID_ARGUMENT for arguments that do not match the
  // method's specs.
  absl::Status get_error() const;
  // The method's outputs, or the call's error. Blocks until the call ends.
  absl::StatusOr<std::vector<devices::Tensor>> get_value() const;
  // Whether the call has ended, waiting for it at most `timeout`.
  bool WaitFor(absl::Duration timeout) const;

 private:
  friend class Client;
  explicit StatusOrResult(std::shared_ptr<rpc_internal::CallState> state)
      : state_(std::move(state)) {}

  std::shared_ptr<rpc_internal::CallState> state_;
};

class Client {
 public:
  // A client of the rpc server at `address` ("host:port" or
  // "grpc://host:port"). With list_registered_methods it fetches the
  // server's methods, waiting up to options.timeout for the server to
  // answer: DEADLINE_EXCEEDED when none does. INVALID_ARGUMENT for an
  // rpc_layer other than "grpc", a bad address, a timeout that is not
  // positive, or bad channel options (naming the field).
  static absl::StatusOr<std::unique_ptr<Client>> Create(
      absl::string_view rpc_layer, absl::string_view address,
      ClientOptions options = {});

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  // Cancels the calls still running (their results say CANCELLED) and
  // returns once gRPC has completed them.
  ~Client();

  // Starts calling `method` on `args` and returns at once. Host tensors
  // only. Thread-safe.
  StatusOrResult Call(absl::string_view method,
                      std::vector<devices::Tensor> args,
                      CallOptions options = {});

  // Call(), then its value.
  absl::StatusOr<std::vector<devices::Tensor>> CallBlocking(
      absl::string_view method, std::vector<devices::Tensor> args,
      CallOptions options = {});

  // The server's methods and their signatures as listed at Create(); empty
  // without list_registered_methods.
  const std::map<std::string, MethodSignature, std::less<>>&
  registered_methods() const {
    return methods_;
  }

  // "host:port".
  const std::string& address() const { return address_; }

 private:
  Client(std::string address, ClientOptions options,
         std::unique_ptr<rpc_internal::ClientCore> core,
         std::map<std::string, MethodSignature, std::less<>> methods);

  // "the rpc server at host:port (client "name")".
  std::string Describe() const;

  const std::string address_;
  const ClientOptions options_;
  // The channel and stub, which only the client holds (see ~Client).
  const std::unique_ptr<rpc_internal::ClientCore> core_;
  // The calls in flight, shared with their completions.
  const std::shared_ptr<rpc_internal::CallRegistry> calls_;
  const std::map<std::string, MethodSignature, std::less<>> methods_;
};

}  // namespace rpc
}  // namespace distribute

#endif  // DISTRIBUTE_RPC_RPC_CLIENT_H_
