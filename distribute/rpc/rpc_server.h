// rpc::Server, as tf.distribute.experimental.rpc.Server: a gRPC server of
// named methods that clients in other processes call with tensors. Unlike
// distribute::Server it belongs to no cluster: any program may run one, on
// any address, for whatever clients can reach it (parameter servers, a
// coordinator's workers, evaluation or data services).
//
// A method is a function of tensors with declared input and output specs
// (TF registers tf.functions with an input signature). Every method is
// registered before Start(), as in TF, so a client's listing is complete.
//
// Example:
//   absl::StatusOr<std::unique_ptr<distribute::rpc::Server>> server =
//       distribute::rpc::Server::Create("grpc", "127.0.0.1:0");
//   const distribute::TensorSpec scalar(devices::DType::kInt32, {});
//   absl::Status s = (*server)->Register(
//       "add",
//       [](std::vector<devices::Tensor> args)
//           -> absl::StatusOr<std::vector<devices::Tensor>> {
//         absl::StatusOr<devices::Tensor> sum =
//             devices::Tensor::FromVector<int32_t>(
//                 {args[0].data<int32_t>()[0] + args[1].data<int32_t>()[0]},
//                 devices::Shape());
//         if (!sum.ok()) return sum.status();
//         return std::vector<devices::Tensor>{*std::move(sum)};
//       },
//       {/*input_specs=*/{scalar, scalar}, /*output_specs=*/{scalar}});
//   s = (*server)->Start();
//   std::string target = (*server)->target();   // "127.0.0.1:41235"
#ifndef DISTRIBUTE_RPC_RPC_SERVER_H_
#define DISTRIBUTE_RPC_RPC_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/server/channel.h"
#include "distribute/tensor_spec.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace distribute {
namespace rpc {

// The only rpc_layer, as in TF.
inline constexpr char kGrpcRpcLayer[] = "grpc";

// A registered method. It may run on several RPC threads at once, so it must
// be thread-safe. Its errors reach the caller with their code and message
// unchanged.
using Method = std::function<absl::StatusOr<std::vector<devices::Tensor>>(
    std::vector<devices::Tensor>)>;

// What a long-running method may ask about its call.
class CallContext {
 public:
  virtual ~CallContext() = default;
  // Whether the caller gave up (its deadline passed, it cancelled or went
  // away) or the server is stopping: the method should return soon, since
  // Server::Stop waits for it.
  virtual bool IsCancelled() const = 0;
  // The caller's deadline (absl::InfiniteFuture() for none).
  virtual absl::Time deadline() const = 0;
};

// A method that watches its call, e.g. to give up a long wait when the
// call is cancelled.
using MethodWithContext =
    std::function<absl::StatusOr<std::vector<devices::Tensor>>(
        std::vector<devices::Tensor>, const CallContext&)>;

// What a method takes and returns.
struct MethodSignature {
  std::vector<TensorSpec> input_specs;
  std::vector<TensorSpec> output_specs;
};

struct ServerOptions {
  // When set, every call must carry this token (ClientOptions::channel's
  // cluster_token); others are UNAUTHENTICATED.
  std::optional<std::string> token;
  // TLS from PEM files (channel.h); with ca_file, clients must present a
  // certificate signed by it.
  TlsOptions tls;
  // Bound on one request or response.
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  KeepaliveOptions keepalive;
};

class Server {
 public:
  // A server that will listen on `address` ("host:port" or "grpc://host:port";
  // port 0 picks a free port, which target() gives after Start()). Nothing
  // listens until Start(). INVALID_ARGUMENT for an rpc_layer other than
  // "grpc" (TF supports no other), an address without a host and port, or
  // bad options (naming the field).
  static absl::StatusOr<std::unique_ptr<Server>> Create(
      absl::string_view rpc_layer, absl::string_view address,
      ServerOptions options = {});

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Stops the server.
  ~Server();

  // Registers `method` as `name`. INVALID_ARGUMENT for an empty name or
  // function; ALREADY_EXISTS if the name is taken; FAILED_PRECONDITION once
  // the server has started (as TF: every method is registered before Start).
  absl::Status Register(absl::string_view name, Method method,
                        MethodSignature signature);
  absl::Status Register(absl::string_view name, MethodWithContext method,
                        MethodSignature signature);

  // Starts listening. UNAVAILABLE when the address cannot be bound (in use,
  // or not an address of this machine); FAILED_PRECONDITION after Stop() (a
  // stopped server cannot restart); a TLS file that cannot be read is
  // INVALID_ARGUMENT naming it. Starting a started server is OK.
  absl::Status Start();

  // Stops listening; calls still running after a short grace are cancelled
  // (their clients see an error, CallContext::IsCancelled() turns true), and
  // Stop returns once their methods have returned: a method that never
  // returns keeps Stop (and the destructor) waiting, and a method must not
  // stop or destroy its own server. Idempotent.
  void Stop();

  // "host:port", with the port chosen at Start() when 0 was given.
  std::string target() const;

  // The registered methods' names, sorted.
  std::vector<std::string> registered_methods() const;

 private:
  class Service;

  Server(std::string address, ServerOptions options);

  const ServerOptions options_;
  std::unique_ptr<Service> service_;
  mutable absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<grpc::Server> grpc_server_ ABSL_GUARDED_BY(mu_);
  absl::Notification stopped_notification_;
};

}  // namespace rpc
}  // namespace distribute

#endif  // DISTRIBUTE_RPC_RPC_SERVER_H_
