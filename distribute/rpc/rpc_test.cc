// The rpc module end to end: servers and clients over gRPC on 127.0.0.1.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/rpc/rpc_client.h"
#include "distribute/rpc/rpc_server.h"
#include "distribute/tensor_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace rpc {
namespace {

using devices::DType;
using devices::Shape;
using devices::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

Tensor Int(int32_t v) { return *Tensor::FromVector<int32_t>({v}, Shape()); }

int32_t IntOf(const Tensor& t) { return t.data<int32_t>()[0]; }

const TensorSpec kIntScalar(DType::kInt32, {});

MethodSignature AddSignature() {
  return {{kIntScalar, kIntScalar}, {kIntScalar}};
}

absl::StatusOr<std::vector<Tensor>> Add(std::vector<Tensor> args) {
  return std::vector<Tensor>{Int(IntOf(args[0]) + IntOf(args[1]))};
}

// A started server on a free port of 127.0.0.1 with "add" and whatever
// `more` registers.
std::unique_ptr<Server> StartServer(
    ServerOptions options = {},
    const std::function<void(Server&)>& more = nullptr) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Create("grpc", "127.0.0.1:0", std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_TRUE((*server)->Register("add", Add, AddSignature()).ok());
  if (more) more(**server);
  absl::Status started = (*server)->Start();
  EXPECT_TRUE(started.ok()) << started;
  return *std::move(server);
}

std::unique_ptr<Client> Connect(const Server& server,
                                ClientOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Create("grpc", server.target(), std::move(options));
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(RpcTest, ClientCallsARegisteredMethod) {
  std::unique_ptr<Server> server = StartServer();
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->target(), HasSubstr("127.0.0.1:"));
  EXPECT_NE(server->target(), "127.0.0.1:0");
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);

  StatusOrResult result = client->Call("add", {Int(2), Int(3)});
  ASSERT_TRUE(result.is_ok()) << result.get_error();
  absl::StatusOr<std::vector<Tensor>> value = result.get_value();
  ASSERT_TRUE(value.ok());
  ASSERT_EQ(value->size(), 1u);
  EXPECT_EQ(IntOf((*value)[0]), 5);

  absl::StatusOr<std::vector<Tensor>> blocking =
      client->CallBlocking("add", {Int(-7), Int(10)});
  ASSERT_TRUE(blocking.ok()) << blocking.status();
  EXPECT_EQ(IntOf((*blocking)[0]), 3);
}

TEST(RpcTest, TheListingCarriesEveryMethodsSpecs) {
  const MethodSignature batch{{TensorSpec(DType::kFloat32, {kUnknownDim, 3}),
                               TensorSpec::UnknownRank(DType::kInt64)},
                              {TensorSpec(DType::kFloat32, {kUnknownDim})}};
  std::unique_ptr<Server> server = StartServer({}, [&](Server& s) {
    ASSERT_TRUE(
        s.Register(
             "batch",
             [](std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
               return std::vector<Tensor>{};
             },
             batch)
            .ok());
  });
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->registered_methods(), ElementsAre("add", "batch"));
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->registered_methods().size(), 2u);
  const MethodSignature& add = client->registered_methods().at("add");
  EXPECT_EQ(add.input_specs, AddSignature().input_specs);
  EXPECT_EQ(add.output_specs, AddSignature().output_specs);
  const MethodSignature& listed = client->registered_methods().at("batch");
  EXPECT_EQ(listed.input_specs, batch.input_specs);
  EXPECT_EQ(listed.output_specs, batch.output_specs);

  ClientOptions unlisted;
  unlisted.list_registered_methods = false;
  std::unique_ptr<Client> other = Connect(*server, unlisted);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->registered_methods().empty());
}

TEST(RpcTest, CallsAreAsynchronous) {
  absl::Notification release;
  std::atomic<int> running{0};
  std::unique_ptr<Server> server = StartServer({}, [&](Server& s) {
    ASSERT_TRUE(s.Register("wait",
                           [&](std::vector<Tensor> args)
                               -> absl::StatusOr<std::vector<Tensor>> {
                             running.fetch_add(1);
                             release.WaitForNotification();
                             return args;
                           },
                           {{kIntScalar}, {kIntScalar}})
                    .ok());
  });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);

  std::vector<StatusOrResult> results;
  for (int i = 0; i < 4; ++i) results.push_back(client->Call("wait", {Int(i)}));
  // Every call reaches the server while none has ended.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (running.load() < 4 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(running.load(), 4);
  EXPECT_FALSE(results[0].WaitFor(absl::Milliseconds(20)));
  release.Notify();
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<std::vector<Tensor>> value = results[i].get_value();
    ASSERT_TRUE(value.ok()) << value.status();
    EXPECT_EQ(IntOf((*value)[0]), i);
  }
}

TEST(RpcTest, ManyThreadsCallAtOnce) {
  std::unique_ptr<Server> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        absl::StatusOr<std::vector<Tensor>> sum =
            client->CallBlocking("add", {Int(t), Int(i)});
        if (sum.ok() && IntOf((*sum)[0]) == t + i) right.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(right.load(), 200);
}

TEST(RpcTest, TheMethodsOwnErrorComesBackUnchanged) {
  std::unique_ptr<Server> server = StartServer({}, [](Server& s) {
    ASSERT_TRUE(
        s.Register(
             "fail",
             [](std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
               return absl::FailedPreconditionError("the table is not loaded");
             },
             {{}, {}})
            .ok());
  });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  StatusOrResult result = client->Call("fail", {});
  EXPECT_FALSE(result.is_ok());
  EXPECT_EQ(result.get_error(),
            absl::FailedPreconditionError("the table is not loaded"));
  EXPECT_EQ(result.get_value().status(), result.get_error());
}

TEST(RpcTest, UnknownMethodsAreNotFound) {
  std::unique_ptr<Server> server = StartServer();
  ASSERT_NE(server, nullptr);
  // A listing client knows at once.
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  absl::Status listed = client->Call("mul", {Int(1), Int(2)}).get_error();
  EXPECT_EQ(listed.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(listed.message(), HasSubstr("method \"mul\" is not registered"));
  EXPECT_THAT(listed.message(), HasSubstr("\"add\""));
  // Any other client hears it from the server.
  ClientOptions unlisted;
  unlisted.list_registered_methods = false;
  std::unique_ptr<Client> other = Connect(*server, unlisted);
  ASSERT_NE(other, nullptr);
  absl::Status remote = other->Call("mul", {Int(1), Int(2)}).get_error();
  EXPECT_EQ(remote.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(remote.message(), HasSubstr("method \"mul\" is not registered"));
  EXPECT_THAT(remote.message(), HasSubstr("\"add\""));
}

TEST(RpcTest, ArgumentsThatDoNotMatchTheSpecsNeverReachTheMethod) {
  std::atomic<int> calls{0};
  std::unique_ptr<Server> server = StartServer({}, [&](Server& s) {
    ASSERT_TRUE(s.Register("count",
                           [&](std::vector<Tensor> args)
                               -> absl::StatusOr<std::vector<Tensor>> {
                             calls.fetch_add(1);
                             return args;
                           },
                           {{kIntScalar}, {kIntScalar}})
                    .ok());
  });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = Connect(*server);
  ClientOptions unlisted;
  unlisted.list_registered_methods = false;
  std::unique_ptr<Client> other = Connect(*server, unlisted);
  ASSERT_NE(client, nullptr);
  ASSERT_NE(other, nullptr);
  for (Client* c : {client.get(), other.get()}) {
    absl::Status dtype =
        c->Call("count", {Tensor::FromVector<float>({1.0f})}).get_error();
    EXPECT_EQ(dtype.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(dtype.message(),
                HasSubstr("tensor 0 is float32[1], which does not match "
                          "TensorSpec(shape=(), dtype=int32)"));
    absl::Status count = c->Call("count", {Int(1), Int(2)}).get_error();
    EXPECT_EQ(count.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(count.message(),
                HasSubstr("are 2 tensors, but 1 are declared"));
  }
  EXPECT_EQ(calls.load(), 0);
  EXPECT_TRUE(client->Call("count", {Int(1)}).is_ok());
  EXPECT_EQ(calls.load(), 1);
}

TEST(RpcTest, OutputsAreCheckedAgainstTheirSpecs) {
  std::unique_ptr<Server> server = StartServer({}, [](Server& s) {
    // Declares an int32 scalar and returns a float vector.
    ASSERT_TRUE(
        s.Register(
             "liar",
             [](std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
               return std::vector<Tensor>{
                   Tensor::FromVector<float>({1.0f, 2.0f})};
             },
             {{}, {kIntScalar}})
            .ok());
  });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  absl::Status liar = client->Call("liar", {}).get_error();
  EXPECT_EQ(liar.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(liar.message(), HasSubstr("outputs of method \"liar\""));

  // Output specs a caller gives are checked too.
  CallOptions expect_float;
  expect_float.output_specs =
      std::vector<TensorSpec>{TensorSpec(DType::kFloat32, {})};
  absl::Status wrong =
      client->Call("add", {Int(1), Int(2)}, expect_float).get_error();
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.message(),
              HasSubstr("do not match the expected output specs"));
}

TEST(RpcTest, RegistrationRules) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Create("grpc", "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->Register("", Add, AddSignature()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*server)->Register("none", Method(), AddSignature()).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*server)->Register("add", Add, AddSignature()).ok());
  EXPECT_EQ((*server)->Register("add", Add, AddSignature()).code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*server)->Start().ok());
  EXPECT_TRUE((*server)->Start().ok());
  absl::Status late = (*server)->Register("late", Add, AddSignature());
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(late.message(), HasSubstr("before Start()"));
  EXPECT_THAT((*server)->registered_methods(), ElementsAre("add"));
  (*server)->Stop();
  (*server)->Stop();
  EXPECT_EQ((*server)->Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RpcTest, BadArgumentsToCreate) {
  absl::StatusOr<std::unique_ptr<Server>> layer =
      Server::Create("grpc+tcp", "127.0.0.1:0");
  EXPECT_EQ(layer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(layer.status().message(), HasSubstr("only \"grpc\""));
  for (const char* address :
       {"", "127.0.0.1", ":80", "127.0.0.1:x", "127.0.0.1:70000"}) {
    EXPECT_EQ(Server::Create("grpc", address).status().code(),
              absl::StatusCode::kInvalidArgument)
        << address;
    EXPECT_EQ(Client::Create("grpc", address).status().code(),
              absl::StatusCode::kInvalidArgument)
        << address;
  }
  ServerOptions tiny;
  tiny.max_message_bytes = 0;
  EXPECT_EQ(Server::Create("grpc", "127.0.0.1:0", tiny).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Client::Create("http", "127.0.0.1:1").status().code(),
            absl::StatusCode::kInvalidArgument);
  ClientOptions zero;
  zero.timeout = absl::ZeroDuration();
  absl::Status timeout = Client::Create("grpc", "127.0.0.1:1", zero).status();
  EXPECT_EQ(timeout.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timeout.message(), HasSubstr("ClientOptions.timeout"));
}

TEST(RpcTest, ASecondServerOnABusyPortIsUnavailable) {
  std::unique_ptr<Server> server = StartServer();
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::unique_ptr<Server>> second =
      Server::Create("grpc", server->target());
  ASSERT_TRUE(second.ok());
  absl::Status started = (*second)->Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(started.message(), HasSubstr("cannot listen"));
}

// Registers "slow", which returns once `release` is notified.
void RegisterSlow(Server& server, absl::Notification& release) {
  // It also returns when its call is cancelled, so that a server whose test
  // failed before the release can still stop.
  ASSERT_TRUE(
      server
          .Register("slow",
                    [&release](std::vector<Tensor>, const CallContext& call)
                        -> absl::StatusOr<std::vector<Tensor>> {
                      while (!release.WaitForNotificationWithTimeout(
                          absl::Milliseconds(5))) {
                        if (call.IsCancelled()) {
                          return absl::CancelledError("cancelled");
                        }
                      }
                      return std::vector<Tensor>{};
                    },
                    {{}, {}})
          .ok());
}

// The address of a server that has stopped: nothing listens there.
std::string DeadAddress() {
  std::unique_ptr<Server> server = StartServer();
  if (server == nullptr) return "";
  std::string target = server->target();
  server->Stop();
  return target;
}

TEST(RpcTest, NoServerMeansADeadlineNotAHang) {
  const std::string address = DeadAddress();
  ASSERT_FALSE(address.empty());
  ClientOptions options;
  options.timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<Client>> listing =
      Client::Create("grpc", address, options);
  EXPECT_EQ(listing.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(listing.status().message(),
              HasSubstr("start the server before creating the client"));

  options.list_registered_methods = false;
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Create("grpc", address, options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Status call = (*client)->Call("add", {Int(1), Int(2)}).get_error();
  EXPECT_EQ(call.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(call.message(), HasSubstr("calling method \"add\" on the rpc "
                                        "server at " +
                                        address));
}

TEST(RpcTest, ASlowMethodPastItsTimeoutIsDeadlineExceeded) {
  absl::Notification release;
  std::unique_ptr<Server> server =
      StartServer({}, [&](Server& s) { RegisterSlow(s, release); });
  ASSERT_NE(server, nullptr);
  ClientOptions named;
  named.name = "trainer";
  std::unique_ptr<Client> client = Connect(*server, named);
  ASSERT_NE(client, nullptr);
  CallOptions quick;
  quick.timeout = absl::Milliseconds(200);
  absl::Status slow = client->Call("slow", {}, quick).get_error();
  EXPECT_EQ(slow.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(slow.message(), HasSubstr("(client \"trainer\")"));
  EXPECT_THAT(slow.message(), HasSubstr("timeout 200ms"));
  release.Notify();
  // Other calls go on.
  EXPECT_TRUE(client->Call("add", {Int(1), Int(1)}).is_ok());
}

TEST(RpcTest, DestroyingTheClientCancelsItsCalls) {
  absl::Notification release;
  std::unique_ptr<Server> server =
      StartServer({}, [&](Server& s) { RegisterSlow(s, release); });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  StatusOrResult result = client->Call("slow", {});
  EXPECT_FALSE(result.WaitFor(absl::Milliseconds(50)));
  client.reset();
  ASSERT_TRUE(result.WaitFor(absl::Seconds(10)));
  EXPECT_EQ(result.get_error().code(), absl::StatusCode::kCancelled);
}

TEST(RpcTest, ResultsDroppedBeforeTheirCallsEndAreHarmless) {
  // The calls' states, and the channel their contexts hold, then go on
  // gRPC's callback threads; the client must still be the channel's last
  // holder (gRPC 1.51 aborts when a callback thread drops it).
  std::atomic<int> served{0};
  std::unique_ptr<Server> server = StartServer({}, [&](Server& s) {
    ASSERT_TRUE(s.Register("count",
                           [&](std::vector<Tensor> args)
                               -> absl::StatusOr<std::vector<Tensor>> {
                             served.fetch_add(1);
                             return args;
                           },
                           {{kIntScalar}, {kIntScalar}})
                    .ok());
  });
  ASSERT_NE(server, nullptr);
  for (int round = 0; round < 3; ++round) {
    std::unique_ptr<Client> client = Connect(*server);
    ASSERT_NE(client, nullptr);
    for (int i = 0; i < 100; ++i) client->Call("count", {Int(i)});
    if (round == 1) {
      // Let some complete with nobody holding their results.
      const absl::Time deadline = absl::Now() + absl::Seconds(10);
      while (served.load() < 150 && absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(1));
      }
    }
    client.reset();
  }
  EXPECT_GT(served.load(), 0);
}

TEST(RpcTest, AMethodSeesItsCallCancelledAndTheServerStopsUnderACall) {
  std::atomic<bool> saw_cancel{false};
  std::atomic<int> entered{0};
  std::unique_ptr<Server> server = StartServer({}, [&](Server& s) {
    ASSERT_TRUE(
        s.Register("wait_for_cancel",
                   [&](std::vector<Tensor>, const CallContext& call)
                       -> absl::StatusOr<std::vector<Tensor>> {
                     entered.fetch_add(1);
                     const absl::Time give_up = absl::Now() + absl::Seconds(30);
                     while (!call.IsCancelled() && absl::Now() < give_up) {
                       absl::SleepFor(absl::Milliseconds(1));
                     }
                     saw_cancel = call.IsCancelled();
                     return absl::CancelledError("gave up");
                   },
                   {{}, {}})
            .ok());
  });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  // The caller's deadline cancels the call on the server.
  CallOptions quick;
  quick.timeout = absl::Milliseconds(200);
  EXPECT_EQ(client->Call("wait_for_cancel", {}, quick).get_error().code(),
            absl::StatusCode::kDeadlineExceeded);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!saw_cancel.load() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_TRUE(saw_cancel.load());

  // Stopping the server cancels a call that is still running.
  saw_cancel = false;
  StatusOrResult pending = client->Call("wait_for_cancel", {});
  const absl::Time second = absl::Now() + absl::Seconds(10);
  while (entered.load() < 2 && absl::Now() < second) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(entered.load(), 2);
  server->Stop();
  EXPECT_TRUE(saw_cancel.load());
  ASSERT_TRUE(pending.WaitFor(absl::Seconds(10)));
  EXPECT_EQ(pending.get_error().code(), absl::StatusCode::kUnavailable)
      << pending.get_error();
}

TEST(RpcTest, ATokenIsRequiredWhenTheServerHasOne) {
  ServerOptions secured;
  secured.token = "s3cret";
  std::unique_ptr<Server> server = StartServer(secured);
  ASSERT_NE(server, nullptr);

  absl::StatusOr<std::unique_ptr<Client>> none =
      Client::Create("grpc", server->target());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(none.status().message(), Not(HasSubstr("s3cret")));

  ClientOptions wrong;
  wrong.channel.cluster_token = "guess";
  EXPECT_EQ(Client::Create("grpc", server->target(), wrong).status().code(),
            absl::StatusCode::kUnauthenticated);
  wrong.list_registered_methods = false;
  std::unique_ptr<Client> unlisted = Connect(*server, wrong);
  ASSERT_NE(unlisted, nullptr);
  EXPECT_EQ(unlisted->Call("add", {Int(1), Int(2)}).get_error().code(),
            absl::StatusCode::kUnauthenticated);

  ClientOptions right;
  right.channel.cluster_token = "s3cret";
  std::unique_ptr<Client> client = Connect(*server, right);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<Tensor>> sum =
      client->CallBlocking("add", {Int(20), Int(22)});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(IntOf((*sum)[0]), 42);
}

TEST(RpcTest, LargeTensorsRoundTripAndOversizedArgumentsAreRefused) {
  std::unique_ptr<Server> server = StartServer({}, [](Server& s) {
    ASSERT_TRUE(
        s.Register("echo",
                   [](std::vector<Tensor> args)
                       -> absl::StatusOr<std::vector<Tensor>> { return args; },
                   {{TensorSpec(DType::kFloat32, {kUnknownDim})},
                    {TensorSpec(DType::kFloat32, {kUnknownDim})}})
            .ok());
  });
  ASSERT_NE(server, nullptr);
  ClientOptions bounded;
  bounded.channel.max_message_bytes = 8 << 20;
  std::unique_ptr<Client> client = Connect(*server, bounded);
  ASSERT_NE(client, nullptr);
  std::vector<float> values(1 << 20);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  absl::StatusOr<std::vector<Tensor>> echoed =
      client->CallBlocking("echo", {Tensor::FromVector<float>(values)});
  ASSERT_TRUE(echoed.ok()) << echoed.status();
  EXPECT_EQ((*echoed)[0].ToVector<float>(), values);

  values.resize(3 << 20);
  absl::Status big =
      client->Call("echo", {Tensor::FromVector<float>(values)}).get_error();
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.message(), HasSubstr("more than max_message_bytes"));
}

}  // namespace
}  // namespace rpc
}  // namespace distribute
