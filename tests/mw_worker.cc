// mw_worker: one worker process of the multi-worker tests. Reads TF_CONFIG,
// makes a MultiWorkerMirroredStrategy on the host platform, trains the small
// classifier of multi_worker_test_util.h and writes its weights.
//
//   export TF_CONFIG='{"cluster":{"worker":["127.0.0.1:5000",
//       "127.0.0.1:5001"]}, "task":{"type":"worker","index":0}}'
//   mw_worker --steps=4 --weights_out=/tmp/w0.bin
//
// Flags (all --name=value):
//   --steps=N              training steps (default 4)
//   --weights_out=PATH     where to write the final weights (raw float32)
//   --timeout_seconds=S    CommunicationOptions::timeout_seconds
//   --die_after_step=K     SIGKILL itself once step K is done
//   --stall_after_step=K   sleep --stall_seconds once step K is done
//   --stall_seconds=S      (default 10)
//   --cluster_token_file=PATH  the cluster token (ServerOptions::cluster_token)
//   --local_devices=N      host devices (replicas) of this worker (default 1)
//   --freeze_after_step=K  SIGSTOP itself once step K is done (its sockets
//                          stay open; only heartbeats can tell it is gone)
//   --cluster_resolver=R   auto (default), tf_config or slurm
//   --slurm_port_base=P    SlurmClusterResolverOptions::port_base
// Prints "worker <index> done checksum <hex>" and exits 0 on success; prints
// "mw_worker failed: <status>" to stderr and exits 1 on an error.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "distribute/cluster/environment_resolver.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/server/channel.h"
#include "distribute/server/server.h"
#include "tests/multi_worker_test_util.h"
#include "tools/distsim/classifier_training.h"

namespace {

absl::Status Main(int argc, char** argv) {
  ASSIGN_OR_RETURN(distsim_test::WorkerFlags flags,
                   distsim_test::WorkerFlags::Parse(argc, argv));
  int64_t steps, timeout, die_after, stall_after, stall_seconds, local_devices,
      freeze_after, port_base;
  for (auto [name, fallback, out] :
       {std::make_tuple("steps", int64_t{4}, &steps),
        std::make_tuple("freeze_after_step", int64_t{-1}, &freeze_after),
        std::make_tuple("slurm_port_base", int64_t{8888}, &port_base),
        std::make_tuple("timeout_seconds", int64_t{0}, &timeout),
        std::make_tuple("die_after_step", int64_t{-1}, &die_after),
        std::make_tuple("stall_after_step", int64_t{-1}, &stall_after),
        std::make_tuple("stall_seconds", int64_t{10}, &stall_seconds),
        std::make_tuple("local_devices", int64_t{1}, &local_devices)}) {
    ASSIGN_OR_RETURN(int64_t value, flags.Int(name, fallback));
    *out = value;
  }

  devices::HostPlatformOptions host;
  host.num_devices = static_cast<int>(local_devices);
  ASSIGN_OR_RETURN(std::unique_ptr<devices::HostPlatform> platform,
                   devices::HostPlatform::Create(host));
  distribute::CommunicationOptions communication;
  if (timeout > 0) communication.timeout_seconds = static_cast<double>(timeout);
  distribute::ServerOptions server_options;
  if (std::optional<std::string> path = flags.Get("cluster_token_file")) {
    ASSIGN_OR_RETURN(std::string token,
                     distribute::ReadClusterTokenFile(*path));
    server_options.cluster_token = std::move(token);
  }
  ASSIGN_OR_RETURN(distribute::cluster::ResolverKind kind,
                   distribute::cluster::ParseResolverKind(
                       flags.Get("cluster_resolver").value_or("auto")));
  distribute::cluster::SlurmClusterResolverOptions slurm;
  slurm.port_base = port_base;
  slurm.gpus_per_node = 0;  // Host devices only.
  ASSIGN_OR_RETURN(
      std::unique_ptr<distribute::cluster::ClusterResolver> resolver,
      distribute::cluster::ResolverFromEnvironment(kind, slurm));
  // Every host device is a replica (by default only the first CPU is).
  distribute::MultiWorkerMirroredStrategy::Options mw;
  mw.cluster_resolver = std::move(resolver);
  mw.communication = communication;
  mw.server = server_options;
  mw.local_devices = platform->DeviceNames();
  ASSIGN_OR_RETURN(auto strategy,
                   distribute::MultiWorkerMirroredStrategy::Create(
                       *platform, std::move(mw)));
  const int worker = strategy->WorkerIndex();
  std::printf("worker %d has %d of %d replicas\n", worker,
              static_cast<int>(strategy->extended().WorkerDevices().size()),
              strategy->NumReplicasInSync());
  if (const distribute::Server* server = strategy->server()) {
    // What the tests check TF_CONFIG's rpc_layer against.
    std::printf("worker %d serves %s, data port %d\n", worker,
                server->protocol().c_str(), server->data_port());
    std::fflush(stdout);  // Tests wait for this line to probe the server.
  }

  distsim::TrainOptions options = distsim_test::SmallClassifier(steps);
  ASSIGN_OR_RETURN(
      auto result,
      distsim::TrainClassifier(*strategy, options,
                               [&](const distsim::StepReport& report) {
                                 if (report.step == die_after) {
                                   std::fflush(stdout);
                                   raise(SIGKILL);
                                 }
                                 if (report.step == freeze_after) {
                                   std::fflush(stdout);
                                   raise(SIGSTOP);
                                 }
                                 if (report.step == stall_after) {
                                   absl::SleepFor(absl::Seconds(stall_seconds));
                                 }
                                 return absl::OkStatus();
                               }));
  if (std::optional<std::string> path = flags.Get("weights_out")) {
    RETURN_IF_ERROR(distsim_test::WriteWeights(*path, result.weights));
  }
  std::printf("worker %d done checksum %s\n", worker,
              result.weights_checksum.c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::Status s = Main(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "mw_worker failed: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
