// mw_worker: one worker process of the multi-worker tests. Reads TF_CONFIG,
// makes a MultiWorkerMirroredStrategy on the host platform, trains the small
// classifier of multi_worker_test_util.h and writes its weights.
//
//   export TF_CONFIG='{"cluster":{"worker":["127.0.0.1:5000",
//       "127.0.0.1:5001"]}, "task":{"type":"worker","index":0}}'
//   mw_worker --steps=4 --weights_out=/tmp/w0.bin
//
// Flags (--name=value; `mw_worker --help` lists them):
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
#include <string>

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
#include "tools/flags/flags.h"

namespace {

absl::Status Main(int argc, char** argv) {
  int64_t steps = 4, timeout = 0, die_after = -1, stall_after = -1,
          stall_seconds = 10, local_devices = 1, freeze_after = -1,
          port_base = 8888;
  std::string weights_out, token_file, resolver_name = "auto";
  tools_flags::FlagSet flags("mw_worker");
  flags.Int("steps", &steps, "training steps");
  flags.String("weights_out", &weights_out,
               "where to write the final weights (raw float32)");
  flags.Int("timeout_seconds", &timeout,
            "CommunicationOptions::timeout_seconds (0: its default)");
  flags.Int("die_after_step", &die_after, "SIGKILL itself once step K is done");
  flags.Int("stall_after_step", &stall_after,
            "sleep --stall_seconds once step K is done");
  flags.Int("stall_seconds", &stall_seconds, "see --stall_after_step");
  flags.String("cluster_token_file", &token_file,
               "the cluster token (ServerOptions::cluster_token)");
  flags.Int("local_devices", &local_devices,
            "host devices (replicas) of this worker");
  flags.Int("freeze_after_step", &freeze_after,
            "SIGSTOP itself once step K is done");
  flags.String("cluster_resolver", &resolver_name, "auto, tf_config or slurm");
  flags.Int("slurm_port_base", &port_base,
            "SlurmClusterResolverOptions::port_base");
  const absl::Status parsed = flags.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return absl::OkStatus();  // --help
  RETURN_IF_ERROR(parsed);

  devices::HostPlatformOptions host;
  host.num_devices = static_cast<int>(local_devices);
  ASSIGN_OR_RETURN(std::unique_ptr<devices::HostPlatform> platform,
                   devices::HostPlatform::Create(host));
  distribute::CommunicationOptions communication;
  if (timeout > 0) communication.timeout_seconds = static_cast<double>(timeout);
  distribute::ServerOptions server_options;
  if (!token_file.empty()) {
    ASSIGN_OR_RETURN(std::string token,
                     distribute::ReadClusterTokenFile(token_file));
    server_options.cluster_token = std::move(token);
  }
  ASSIGN_OR_RETURN(distribute::cluster::ResolverKind kind,
                   distribute::cluster::ParseResolverKind(resolver_name));
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
  if (!weights_out.empty()) {
    RETURN_IF_ERROR(distsim_test::WriteWeights(weights_out, result.weights));
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
