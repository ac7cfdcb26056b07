// `distsim train`: trains the classifier of classifier_training.h with a
// strategy on a platform, printing a line per step and a summary; on a
// simulated platform each step reports its simulated time split into
// compute, communication and idle, and a Chrome trace can be written.
//
// --strategy=multi_worker_mirrored runs MultiWorkerMirroredStrategy two
// ways:
//  * on a simulated multi-host platform (--platform=sim:TOPOLOGY, the
//    default being sim:dgx_h100_cluster:2 outside a cluster), the
//    whole cluster runs in this process, one worker per simulated host
//    (distribute/in_process_cluster.h); the chief (task 0) prints the step
//    lines with the simulated step time of all replicas, and the JSON line
//    gives "num_workers".
//  * with TF_CONFIG set, or inside a Slurm step (srun; see
//    --cluster_resolver), with platform "host" unless --platform says
//    otherwise, this process is one worker of the cluster they describe;
//    each worker's replicas are its GPUs, else its first CPU (under Slurm:
//    the resolver's GPUs per task, as TF; --replicas=N: its first N
//    devices). Start one
//    process per worker (its own TF_CONFIG task, or one srun task each).
//    Every worker prints its
//    step lines, the summary and (with --json) the JSON line, which also
//    gives "worker_index" and "num_workers"; the workers' results are the
//    same, so a launcher may read any of them (the chief's, worker 0, by
//    convention).
// A real platform outside a cluster, or a simulated topology of one host,
// is an error that says what to pass.
//
// --strategy=tpu trains with TPUStrategy on the platform's TPU system (by
// default the simulated slice sim:tpu_v4:2x2x1): --replicas replicas (0: as
// many as fit) of --tpu_computation_shape cores each, laid out by TF's
// DeviceAssignment::Build.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "devices/device.h"
#include "devices/platform.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "distribute/central_storage_strategy.h"
#include "distribute/cluster/environment_resolver.h"
#include "distribute/cluster/json.h"
#include "distribute/cluster/slurm_cluster_resolver.h"
#include "distribute/in_process_cluster.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/one_device_strategy.h"
#include "distribute/server/channel.h"
#include "distribute/strategy_devices.h"
#include "distribute/tpu/device_assignment.h"
#include "distribute/tpu/tpu_strategy.h"
#include "tools/distsim/classifier_training.h"
#include "tools/distsim/platforms.h"
#include "tools/distsim/ps_training.h"
#include "tools/distsim/step_timer.h"
#include "tools/distsim/subcommands.h"
#include "tools/flags/flags.h"

namespace distsim {
namespace {

// The replica devices: all GPUs (else all CPUs) of the platform, the first
// `replicas` of them (0: all).
absl::StatusOr<std::vector<std::string>> ReplicaDevices(devices::Platform& p,
                                                        int64_t replicas) {
  std::vector<std::string> gpus, cpus;
  for (const std::string& n : p.DeviceNames()) {
    ASSIGN_OR_RETURN(devices::Device * d, p.FindDevice(n));
    if (d->kind() == devices::DeviceKind::kGPU) gpus.push_back(n);
    if (d->kind() == devices::DeviceKind::kCPU) cpus.push_back(n);
  }
  std::vector<std::string> all = gpus.empty() ? cpus : gpus;
  if (replicas < 0 || replicas > static_cast<int64_t>(all.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas=", replicas, " but platform ", p.name(),
                     " has ", all.size(), " ", gpus.empty() ? "CPU" : "GPU",
                     " device(s); use 1..", all.size(), " (or 0 for all)"));
  }
  if (replicas > 0) all.resize(replicas);
  return all;
}

// TPUStrategy on the platform's TPU system: `replicas` replicas (0: as
// many as fit) of `computation_shape` ("x,y,z,core"; "" for one core), laid
// out by TF's DeviceAssignment::Build.
absl::StatusOr<std::unique_ptr<distribute::TPUStrategy>> MakeTpuStrategy(
    devices::Platform& platform, int64_t replicas,
    const std::string& computation_shape) {
  absl::StatusOr<devices::TpuTopology> topology = platform.GetTpuTopology();
  if (!topology.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--strategy=tpu: ", topology.status().message()));
  }
  distribute::tpu::DeviceAssignment::BuildOptions build;
  std::array<int, 4> shape = {1, 1, 1, 1};
  if (!computation_shape.empty()) {
    const std::vector<std::string> parts =
        absl::StrSplit(computation_shape, ',');
    bool ok = parts.size() == 4;
    for (size_t i = 0; ok && i < 4; ++i) {
      ok = absl::SimpleAtoi(parts[i], &shape[i]) && shape[i] >= 1;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tpu_computation_shape=", computation_shape,
          " is not four positive counts x,y,z,core (e.g. 1,1,1,2)"));
    }
    build.computation_shape = shape;
  }
  if (replicas < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas=", replicas, " is negative"));
  }
  if (replicas == 0) {
    // As many as fit (at least 1, so that a block too large for the mesh
    // gets Build's error).
    replicas = std::max<int64_t>(
        distribute::tpu::DeviceAssignment::MaxReplicas(*topology, build), 1);
  }
  if (replicas > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas=", replicas, " is too large"));
  }
  build.num_replicas = static_cast<int>(replicas);
  ASSIGN_OR_RETURN(distribute::tpu::DeviceAssignment assignment,
                   distribute::tpu::DeviceAssignment::Build(*topology, build));
  distribute::TPUStrategy::Options options;
  options.device_assignment = std::move(assignment);
  return distribute::TPUStrategy::Create(platform, std::move(options));
}

using distribute::cluster::DumpJson;
using distribute::cluster::Json;

// A loss for the summary line: nine significant digits; "null" where there
// is none or it is not finite (as the JSON line writes it).
std::string LossText(const std::optional<double>& v) {
  return v.has_value() && std::isfinite(*v) ? absl::StrFormat("%.9g", *v)
                                            : "null";
}

// A JSON value for an optional number: null when absent (DumpJson writes
// non-finite numbers as null too).
Json OptionalNumber(const std::optional<double>& v) {
  return v.has_value() ? Json(*v) : Json();
}

void PrintHeader(distribute::Strategy& strategy, const std::string& worker,
                 const std::string& platform_spec,
                 const TrainOptions& options) {
  std::printf(
      "distsim train: %s%s on %s, %d replica(s), cross-device ops %s, "
      "global batch %lld, %lld steps\n",
      strategy.name().c_str(), worker.c_str(), platform_spec.c_str(),
      strategy.NumReplicasInSync(),
      strategy.extended().cross_device_ops().name().c_str(),
      static_cast<long long>(options.global_batch),
      static_cast<long long>(options.steps));
}

// One step's line; with a timer, the step's simulated time over `devices`
// (kept in step_us) and the timer restarted.
void PrintStep(const StepReport& report, int64_t steps, StepTimer* timer,
               const std::vector<std::string>& devices,
               std::vector<double>& step_us) {
  std::string line = absl::StrFormat(
      "step %4lld/%lld  loss %s", static_cast<long long>(report.step),
      static_cast<long long>(steps),
      report.loss.has_value() ? absl::StrFormat("%.6f", *report.loss)
                              : std::string("(timing only)"));
  if (timer != nullptr) {
    StepTime t = timer->EndStep(devices);
    step_us.push_back(t.step_us);
    absl::StrAppend(&line, absl::StrFormat("  simulated %.1f us (compute %.1f, "
                                           "communication %.1f, idle %.1f)",
                                           t.step_us, t.compute_us,
                                           t.communication_us, t.idle_us));
    timer->StartStep();
  }
  std::printf("%s\n", line.c_str());
}

// The summary, the run's table and trace (simulated platforms) and the JSON
// line (with `extra`'s members after its own).
absl::Status PrintResults(const TrainResult& result,
                          const std::vector<double>& step_us, StepTimer* timer,
                          const std::string& trace_path,
                          const std::string& platform_spec, bool json,
                          const std::string& strategy_name, int replicas,
                          int64_t steps, const Json& extra = Json::object()) {
  std::optional<double> mean_step_us;
  if (!step_us.empty()) {
    double sum = 0;
    for (double s : step_us) sum += s;
    mean_step_us = sum / step_us.size();
  }
  std::printf("summary: loss %s -> %s, weights checksum %s",
              LossText(result.initial_loss).c_str(),
              LossText(result.final_loss).c_str(),
              result.weights_checksum.c_str());
  if (mean_step_us.has_value()) {
    std::printf(", mean simulated step %.1f us", *mean_step_us);
  }
  std::printf("\n");
  if (timer != nullptr) {
    std::printf("%s", timer->Summary().c_str());
    if (!trace_path.empty()) {
      RETURN_IF_ERROR(timer->WriteTrace(trace_path));
      std::printf("trace written to %s (open it in Perfetto)\n",
                  trace_path.c_str());
    }
  } else if (!trace_path.empty()) {
    std::fprintf(stderr,
                 "distsim train: no trace written: platform %s keeps no "
                 "simulated clock (traces come from sim:TOPOLOGY)\n",
                 platform_spec.c_str());
  }
  if (json) {
    Json line = {{"strategy", strategy_name},
                 {"platform", platform_spec},
                 {"replicas", replicas},
                 {"steps", steps},
                 {"initial_loss", OptionalNumber(result.initial_loss)},
                 {"final_loss", OptionalNumber(result.final_loss)},
                 {"weights_checksum", result.weights_checksum},
                 {"simulated_step_us", OptionalNumber(mean_step_us)}};
    line.update(extra);
    std::printf("%s\n", DumpJson(line).c_str());
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

// The whole cluster of a simulated multi-host platform in this process, one
// worker per host; the chief prints.
// An evaluator task (TF_CONFIG task type "evaluator"): TF's side-car
// evaluation of the checkpoints the workers write, until the last step's.
absl::Status RunEvaluator(const TrainOptions& options, bool json) {
  if (options.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "this process is the cluster's evaluator (TF_CONFIG task type "
        "\"evaluator\"): it evaluates the checkpoints the workers write; give "
        "it their --checkpoint_dir (and run them with --checkpoint_every)");
  }
  std::printf(
      "distsim train: evaluator: evaluating the checkpoints in %s until step "
      "%lld\n",
      options.checkpoint_dir.c_str(), static_cast<long long>(options.steps));
  std::fflush(stdout);
  ASSIGN_OR_RETURN(std::vector<EvaluationReport> reports,
                   RunSidecarEvaluation(
                       options,
                       [&](const EvaluationReport& r) {
                         std::printf("eval  step %5lld/%lld  loss %.6f  (%s)\n",
                                     static_cast<long long>(r.step),
                                     static_cast<long long>(options.steps),
                                     r.loss, r.checkpoint.c_str());
                         std::fflush(stdout);
                         return absl::OkStatus();
                       },
                       absl::Milliseconds(200),
                       [](const std::string& line) {
                         std::fprintf(stderr, "distsim train: evaluator: %s\n",
                                      line.c_str());
                         std::fflush(stderr);
                       }));
  const EvaluationReport& last = reports.back();
  std::printf(
      "summary: evaluated %zu checkpoint(s), last at step %lld: eval "
      "loss %.9g, weights checksum %s\n",
      reports.size(), static_cast<long long>(last.step), last.loss,
      last.weights_checksum.c_str());
  if (json) {
    const Json line = {{"role", "evaluator"},
                       {"checkpoints", reports.size()},
                       {"final_step", last.step},
                       {"final_eval_loss", last.loss},
                       {"weights_checksum", last.weights_checksum}};
    std::printf("%s\n", DumpJson(line).c_str());
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

absl::Status RunSimulatedCluster(devices::Platform& platform,
                                 const std::string& platform_spec,
                                 const distribute::CommunicationOptions& comm,
                                 const TrainOptions& options,
                                 const std::string& trace_path, bool json) {
  ASSIGN_OR_RETURN(std::unique_ptr<distribute::InProcessCluster> cluster,
                   distribute::InProcessCluster::Create(platform, comm));
  distribute::InProcessCluster& workers = *cluster;
  // Every replica of every worker, for the step times.
  std::vector<std::string> all_devices;
  for (int w = 0; w < workers.num_workers(); ++w) {
    const std::vector<std::string>& local =
        workers.worker(w).extended().WorkerDevices();
    all_devices.insert(all_devices.end(), local.begin(), local.end());
  }
  distribute::Strategy& chief = workers.worker(0);
  PrintHeader(chief,
              absl::StrFormat(" (%d simulated workers, one per host)",
                              workers.num_workers()),
              platform_spec, options);
  std::unique_ptr<StepTimer> timer = MakeStepTimer(platform);
  std::vector<double> step_us;
  std::optional<TrainResult> chief_result;
  if (timer != nullptr) timer->StartStep();
  RETURN_IF_ERROR(
      workers.Run([&](distribute::MultiWorkerMirroredStrategy& strategy) {
        const bool is_chief = strategy.IsChief();
        ASSIGN_OR_RETURN(
            TrainResult result,
            TrainClassifier(strategy, options, [&](const StepReport& report) {
              // Only the chief's thread touches the timer and stdout.
              if (is_chief) {
                PrintStep(report, options.steps, timer.get(), all_devices,
                          step_us);
              }
              return absl::OkStatus();
            }));
        if (is_chief) chief_result = std::move(result);
        return absl::OkStatus();
      }));
  if (!chief_result.has_value()) {
    return absl::InternalError("the chief finished without a result");
  }
  return PrintResults(
      *chief_result, step_us, timer.get(), trace_path, platform_spec, json,
      "multi_worker_mirrored", chief.NumReplicasInSync(), options.steps,
      Json{{"worker_index", 0}, {"num_workers", workers.num_workers()}});
}

// How a worker process was launched, for messages.
std::string LaunchedBy(distribute::cluster::ResolverKind kind) {
  return kind == distribute::cluster::ResolverKind::kSlurm
             ? "SLURM_PROCID is set"
             : "TF_CONFIG is set";
}

// A parameter-server run's step lines (no simulated time) and results.
StepCallback PrintParameterServerStep(const TrainOptions& options) {
  return [steps = options.steps](const StepReport& report) {
    std::vector<double> none;
    PrintStep(report, steps, nullptr, {}, none);
    return absl::OkStatus();
  };
}
absl::Status PrintParameterServerRun(const absl::StatusOr<TrainResult>& result,
                                     const TrainOptions& options, int workers,
                                     const std::string& trace_path, bool json) {
  RETURN_IF_ERROR(result.status());
  std::vector<double> none;
  return PrintResults(*result, none, nullptr, trace_path, "host", json,
                      "parameter_server", workers, options.steps);
}

// --strategy=parameter_server --platform=sim:TOPOLOGY: the cluster on
// simulated hosts of this process; the steps' lines once all have run, the
// simulated time they took, the summary.
absl::Status RunSimulatedParameterServers(const TrainOptions& options,
                                          const std::string& platform_spec,
                                          int64_t num_workers, int64_t num_ps,
                                          const std::string& trace_path,
                                          bool json) {
  RegisterAllPlatforms();
  ASSIGN_OR_RETURN(std::unique_ptr<devices::Platform> platform,
                   devices::CreatePlatform(platform_spec));
  ASSIGN_OR_RETURN(auto tasks, distribute::DevicesByTask(*platform));
  if (num_ps == 0) num_ps = 1;
  if (num_workers == 0) {
    num_workers =
        std::max<int64_t>(1, static_cast<int64_t>(tasks.size()) - num_ps);
  }
  if (num_workers < 1 || num_ps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num_workers=", num_workers, " --num_ps=", num_ps,
                     ": give at least one of each"));
  }
  std::printf(
      "distsim train: ParameterServerStrategy on %s, %lld worker host(s) and "
      "%lld ps host(s), asynchronous, batch %lld a step, %lld steps\n",
      platform_spec.c_str(), static_cast<long long>(num_workers),
      static_cast<long long>(num_ps),
      static_cast<long long>(options.global_batch),
      static_cast<long long>(options.steps));
  std::fflush(stdout);
  std::unique_ptr<StepTimer> timer = MakeStepTimer(*platform);
  if (timer != nullptr) timer->StartStep();
  std::vector<std::string> replicas;
  std::vector<double> none;
  ASSIGN_OR_RETURN(
      TrainResult result,
      TrainClassifierOnSimulatedParameterServers(
          options, *platform, static_cast<int>(num_workers),
          static_cast<int>(num_ps),
          [steps = options.steps, &none](const StepReport& report) {
            PrintStep(report, steps, nullptr, {}, none);
            return absl::OkStatus();
          },
          &replicas));
  std::vector<double> step_us;
  if (timer != nullptr) {
    StepTime t = timer->EndStep(replicas);
    step_us.push_back(t.step_us / static_cast<double>(options.steps));
    std::printf(
        "simulated: %lld steps in %.1f us on %lld workers (compute %.1f, "
        "communication %.1f, idle %.1f us a worker)\n",
        static_cast<long long>(options.steps), t.step_us,
        static_cast<long long>(num_workers), t.compute_us, t.communication_us,
        t.idle_us);
  }
  return PrintResults(result, step_us, timer.get(), trace_path, platform_spec,
                      json, "parameter_server", static_cast<int>(num_workers),
                      options.steps);
}

// --strategy=parameter_server in a process launched as one task of a
// cluster under TF_CONFIG (jobs "chief", "worker", "ps"): the chief
// coordinates, the others serve until the chief is done.
absl::Status RunParameterServerTask(const TrainOptions& options,
                                    distribute::cluster::ResolverKind launched,
                                    const std::string& token_file,
                                    const distribute::TlsOptions& tls,
                                    absl::Duration startup_timeout,
                                    const std::string& trace_path, bool json) {
  if (launched != distribute::cluster::ResolverKind::kTfConfig) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=parameter_server needs a cluster of chief, worker and ps "
        "tasks, which TF_CONFIG describes and a Slurm step does not (",
        LaunchedBy(launched),
        "); launch each task with its TF_CONFIG, or run the whole cluster in "
        "one process outside srun"));
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<distribute::cluster::ClusterResolver> resolver,
      distribute::cluster::ResolverFromEnvironment(launched, {}));
  ASSIGN_OR_RETURN(distribute::cluster::ClusterSpec spec,
                   resolver->cluster_spec());
  const std::string type = resolver->task_type().value_or("");
  const int index = static_cast<int>(resolver->task_id().value_or(0));
  distribute::ServerOptions server;
  server.tls = tls;
  if (!token_file.empty()) {
    ASSIGN_OR_RETURN(std::string token,
                     distribute::ReadClusterTokenFile(token_file));
    server.cluster_token = std::move(token);
  }
  auto log = [](const std::string& line) {
    std::fprintf(stderr, "distsim train: %s\n", line.c_str());
    std::fflush(stderr);
  };
  if (type == "worker" || type == "ps") {
    RETURN_IF_ERROR(
        ServeParameterServerTask(options, spec, type, index, server, log));
    log(absl::StrCat(type, " ", index, ": the chief is done"));
    if (json) {
      std::printf("%s\n",
                  DumpJson(Json{{"role", type}, {"task", index}}).c_str());
    }
    return absl::OkStatus();
  }
  if (type != "chief") {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG names this task '", type, "' ", index,
        "; a parameter-server cluster's tasks are chief (which trains), "
        "worker and ps"));
  }
  distribute::ChannelOptions channel;
  channel.cluster_token = server.cluster_token;
  channel.tls = tls;
  const int64_t workers = spec.num_tasks("worker").value_or(0);
  const int64_t ps = spec.num_tasks("ps").value_or(0);
  if (workers < 1 || ps < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the parameter-server cluster has no ", workers < 1 ? "worker" : "ps",
        " tasks; give TF_CONFIG's cluster a \"", workers < 1 ? "worker" : "ps",
        "\" job"));
  }
  std::printf(
      "distsim train: ParameterServerStrategy, the chief of %lld worker(s) "
      "and %lld ps task(s) (TF_CONFIG), asynchronous, batch %lld a step, "
      "%lld steps\n",
      static_cast<long long>(workers), static_cast<long long>(ps),
      static_cast<long long>(options.global_batch),
      static_cast<long long>(options.steps));
  std::fflush(stdout);
  return PrintParameterServerRun(
      CoordinateParameterServerTraining(options, spec, channel, startup_timeout,
                                        PrintParameterServerStep(options), log),
      options, static_cast<int>(workers), trace_path, json);
}

}  // namespace

absl::Status RunTrain(const std::vector<std::string>& args) {
  std::string strategy_name = "mirrored";
  std::string platform_spec;  // Default: see below.
  int64_t replicas = 0;
  TrainOptions options;
  std::string trace_path;
  bool json = false;
  tools_flags::FlagSet flags("distsim train");
  flags.String("strategy", &strategy_name,
               "one_device, mirrored, central_storage, multi_worker_mirrored "
               "(a simulated multi-host cluster in this process, or with "
               "TF_CONFIG one worker of that cluster), tpu (the TPU cores "
               "of a TPU slice, default sim:tpu_v4:2x2x1) or parameter_server "
               "(asynchronous: --num_workers workers and --num_ps ps tasks as "
               "servers of this process, on simulated hosts of their own with "
               "--platform=sim:MULTI_HOST_TOPOLOGY, or with TF_CONFIG one "
               "task, chief, worker or ps, of a cluster of processes)");
  // 0: not given (TF_CONFIG's cluster says how many, else the defaults).
  int64_t num_workers = 0;
  int64_t num_ps = 0;
  flags.Int("num_workers", &num_workers,
            "parameter_server in one process: worker tasks, each step runs "
            "on one (default 2; on a simulated platform, its hosts less the "
            "ps tasks)");
  flags.Int("num_ps", &num_ps,
            "parameter_server in one process: ps tasks holding the variables "
            "(default 1)");
  std::string tpu_computation_shape;
  flags.String("tpu_computation_shape", &tpu_computation_shape,
               "tpu: each replica's block of cores as x,y,z,core (TF's "
               "computation_shape, e.g. 1,1,1,2 for both cores of a v4 chip; "
               "default one core), laid out by DeviceAssignment::Build");
  flags.String("platform", &platform_spec,
               "host[:N], cuda or sim:TOPOLOGY (default: sim:dgx_h100; for "
               "multi_worker_mirrored sim:dgx_h100_cluster:2, or host with "
               "TF_CONFIG)");
  double timeout_seconds = 0;
  flags.Double("timeout_seconds", &timeout_seconds,
               "multi_worker_mirrored: bound on each collective (0: none)");
  double startup_timeout_seconds = 600;
  flags.Double("startup_timeout_seconds", &startup_timeout_seconds,
               "parameter_server chief under TF_CONFIG: how long to wait for "
               "the worker and ps tasks to come up");
  std::string resolver_name = "auto";
  flags.String("cluster_resolver", &resolver_name,
               "multi_worker_mirrored: how a worker finds its cluster: auto "
               "(TF_CONFIG when set, else the Slurm step inside srun), "
               "tf_config or slurm");
  int64_t slurm_port_base = 8888;
  flags.Int("slurm_port_base", &slurm_port_base,
            "Slurm: the port of the first task on each node (the k'th task "
            "of a node listens on port_base + k)");
  int64_t slurm_gpus_per_node = -1;
  flags.Int("slurm_gpus_per_node", &slurm_gpus_per_node,
            "Slurm: GPUs on each node (-1: on --platform=cuda what "
            "CUDA_VISIBLE_DEVICES shows, else what `nvidia-smi --list-gpus` "
            "lists, as TF; 0 otherwise)");
  std::string token_file;
  distribute::TlsOptions tls;
  flags.String("cluster_token_file", &token_file,
               "multi_worker_mirrored with TF_CONFIG: a file holding the "
               "cluster's shared token, which every call must carry");
  flags.String("tls_cert", &tls.cert_file,
               "multi_worker_mirrored with TF_CONFIG: this worker's PEM "
               "certificate (with --tls_key, TLS on every connection)");
  flags.String("tls_key", &tls.key_file, "the PEM key of --tls_cert");
  flags.String("tls_ca", &tls.ca_file,
               "the PEM CA that signs every worker's certificate (mutual "
               "TLS)");
  flags.Int("replicas", &replicas,
            "replica devices (0: all GPUs, else all CPUs; for a "
            "multi_worker_mirrored worker process, this worker's, 0 meaning "
            "its GPUs, else its first CPU)");
  flags.Int("steps", &options.steps, "training steps");
  flags.Int("global_batch", &options.global_batch, "global batch size");
  int64_t seed = static_cast<int64_t>(options.seed);
  flags.Int("seed", &seed, "seed of the data and the initial weights");
  flags.String("optimizer", &options.optimizer, "sgd (momentum 0.9) or adam");
  flags.Double("learning_rate", &options.learning_rate, "learning rate");
  flags.String("trace", &trace_path,
               "write a Chrome trace (simulated platforms) to this file");
  flags.Bool("json", &json,
             "end with one JSON object of the results on the last line");
  flags.String(
      "checkpoint_dir", &options.checkpoint_dir,
      "survive preemption: resume from this directory's latest checkpoint, "
      "and on SIGTERM to any worker save one there after the same step on "
      "every worker, then exit with code 42 (run the same command again to "
      "resume)");
  flags.Int("checkpoint_every", &options.checkpoint_every,
            "with --checkpoint_dir: also save a checkpoint every N steps and "
            "after the last (0: only on preemption); what an evaluator task "
            "(TF_CONFIG task type \"evaluator\") evaluates");
  absl::Status parsed = flags.Parse(args);
  if (absl::IsCancelled(parsed)) return absl::OkStatus();
  RETURN_IF_ERROR(parsed);
  options.seed = static_cast<uint64_t>(seed);
  trace_path = UserPath(std::move(trace_path));
  options.checkpoint_dir = UserPath(std::move(options.checkpoint_dir));
  if (!options.checkpoint_dir.empty()) {
    options.on_resume = [](const std::string& checkpoint, int64_t steps) {
      std::printf("distsim train: resuming from %s after step %lld\n",
                  checkpoint.c_str(), static_cast<long long>(steps));
      std::fflush(stdout);
    };
    // Say why the process ends, then end it as the handler would.
    const std::string dir = options.checkpoint_dir;
    options.termination.exit_fn = [dir] {
      std::fprintf(stderr,
                   "distsim train: stopping for preemption (SIGTERM): a "
                   "checkpoint is saved in %s; run the same command again to "
                   "resume (exit code %d)\n",
                   dir.c_str(), distribute::kPreemptionExitCode);
      std::fflush(nullptr);
      std::_Exit(distribute::kPreemptionExitCode);
    };
  }
  if (!trace_path.empty()) {
    // Found out now, not after the last step.
    std::FILE* file = std::fopen(trace_path.c_str(), "a");
    if (file == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--trace=", trace_path, ": cannot write there (",
                       std::strerror(errno), "); give a writable file path"));
    }
    std::fclose(file);
  }
  const bool multi_worker = strategy_name == "multi_worker_mirrored";
  ASSIGN_OR_RETURN(distribute::cluster::ResolverKind resolver_kind,
                   distribute::cluster::ParseResolverKind(resolver_name));
  // Whether this process was launched as a worker of a cluster (TF_CONFIG,
  // or a Slurm step for --cluster_resolver=auto or slurm).
  const std::optional<distribute::cluster::ResolverKind> launched =
      distribute::cluster::DetectCluster(resolver_kind);
  const bool launched_as_worker =
      launched.has_value() ||
      (multi_worker &&
       resolver_kind == distribute::cluster::ResolverKind::kSlurm);
  const bool simulated_ps = strategy_name == "parameter_server" &&
                            absl::StartsWith(platform_spec, "sim:");
  if (strategy_name == "parameter_server") {
    if (!platform_spec.empty() && platform_spec != "host" && !simulated_ps) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--strategy=parameter_server trains on the host's CPUs, or on "
          "simulated hosts (--platform=sim:dgx_h100_cluster:3); not on "
          "--platform=",
          platform_spec));
    }
    if (simulated_ps && launched.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--strategy=parameter_server --platform=", platform_spec,
          " runs the whole simulated cluster in this process, but this "
          "process was launched as a task (",
          LaunchedBy(*launched), "); unset TF_CONFIG, or drop --platform"));
    }
    if (timeout_seconds != 0) {
      return absl::InvalidArgumentError(
          "--timeout_seconds bounds multi_worker_mirrored's collectives; "
          "parameter_server has none (its chief waits for its tasks "
          "--startup_timeout_seconds)");
    }
  } else if (startup_timeout_seconds != 600) {
    return absl::InvalidArgumentError(
        "--startup_timeout_seconds applies to --strategy=parameter_server");
  }
  if (strategy_name != "parameter_server" &&
      (num_workers != 0 || num_ps != 0)) {
    return absl::InvalidArgumentError(
        "--num_workers and --num_ps apply to --strategy=parameter_server");
  }
  if (strategy_name == "parameter_server" && launched.has_value()) {
    if (num_workers != 0 || num_ps != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--num_workers and --num_ps size a cluster in one process; this "
          "one is a task of the cluster ",
          LaunchedBy(*launched), " describes: drop them"));
    }
    if (!(startup_timeout_seconds > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--startup_timeout_seconds=", startup_timeout_seconds,
                       ": give a positive number of seconds"));
    }
    return RunParameterServerTask(options, *launched, token_file, tls,
                                  absl::Seconds(startup_timeout_seconds),
                                  trace_path, json);
  }
  if (simulated_ps) {
    return RunSimulatedParameterServers(options, platform_spec, num_workers,
                                        num_ps, trace_path, json);
  }
  if (strategy_name == "parameter_server") {
    if (num_workers == 0) num_workers = 2;
    if (num_ps == 0) num_ps = 1;
    if (num_workers < 1 || num_workers > 64 || num_ps < 1 || num_ps > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("--num_workers=", num_workers, " --num_ps=", num_ps,
                       ": give 1 to 64 of each"));
    }
    std::printf(
        "distsim train: ParameterServerStrategy, %lld worker(s) and %lld ps "
        "task(s) in this process, asynchronous, batch %lld a step, %lld "
        "steps\n",
        static_cast<long long>(num_workers), static_cast<long long>(num_ps),
        static_cast<long long>(options.global_batch),
        static_cast<long long>(options.steps));
    std::fflush(stdout);
    return PrintParameterServerRun(
        TrainClassifierOnParameterServers(
            options, static_cast<int>(num_workers), static_cast<int>(num_ps),
            PrintParameterServerStep(options)),
        options, static_cast<int>(num_workers), trace_path, json);
  }
  const bool tpu = strategy_name == "tpu";
  if (!tpu_computation_shape.empty() && !tpu) {
    return absl::InvalidArgumentError(
        "--tpu_computation_shape applies to --strategy=tpu only");
  }
  if (platform_spec.empty()) {
    platform_spec =
        tpu ? std::string(kDefaultTpuPlatform)
        : !multi_worker
            ? std::string(kDefaultPlatform)
            : (launched_as_worker ? "host" : std::string(kDefaultCluster));
  }
  const bool simulated_cluster =
      multi_worker && absl::StartsWith(platform_spec, "sim:");
  if (simulated_cluster && launched_as_worker) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=multi_worker_mirrored --platform=", platform_spec,
        " runs the whole simulated cluster in this process, but this process "
        "was launched as a worker (",
        launched.has_value() ? LaunchedBy(*launched) : "--cluster_resolver",
        "); unset TF_CONFIG (or run outside srun), or pass --platform=host "
        "to run as a worker of that cluster"));
  }
  if (multi_worker && !simulated_cluster && !launched_as_worker) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=multi_worker_mirrored on platform ", platform_spec,
        " needs TF_CONFIG or a Slurm step (this process is one worker of "
        "that cluster; start one process per worker, e.g. with srun), or "
        "pass --platform=sim:",
        kDefaultCluster.substr(4),
        " (any multi-host sim: topology) to simulate the cluster in this "
        "process"));
  }
  if (simulated_cluster && replicas != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--replicas=", replicas,
        " does not apply to a simulated multi_worker_mirrored cluster: each "
        "simulated host's replicas are its GPUs"));
  }

  // The worker's cluster resolver, made before the platform: a Slurm task
  // takes its share of the node's GPUs (CUDA_VISIBLE_DEVICES), which CUDA
  // reads once, when the platform starts.
  std::unique_ptr<distribute::cluster::ClusterResolver> resolver;
  if (multi_worker && !simulated_cluster) {
    const bool cuda = absl::StartsWith(platform_spec, "cuda");
    distribute::cluster::SlurmClusterResolverOptions slurm;
    slurm.port_base = slurm_port_base;
    if (slurm_gpus_per_node >= 0) {
      slurm.gpus_per_node = slurm_gpus_per_node;
    } else if (!cuda) {
      slurm.gpus_per_node = 0;  // The replicas are CPUs.
    }
    ASSIGN_OR_RETURN(std::unique_ptr<distribute::cluster::ClusterResolver> made,
                     distribute::cluster::ResolverFromEnvironment(
                         resolver_kind, std::move(slurm)));
    resolver = std::move(made);
    auto* slurm_resolver =
        dynamic_cast<distribute::cluster::SlurmClusterResolver*>(
            resolver.get());
    if (slurm_resolver != nullptr && cuda) {
      RETURN_IF_ERROR(slurm_resolver->ApplyCudaVisibleDevices());
    }
  }

  if (resolver != nullptr && resolver->task_type() == "evaluator") {
    return RunEvaluator(options, json);
  }

  RegisterAllPlatforms();
  ASSIGN_OR_RETURN(std::unique_ptr<devices::Platform> platform,
                   devices::CreatePlatform(platform_spec));
  if (simulated_cluster) {
    distribute::CommunicationOptions communication;
    if (timeout_seconds > 0) communication.timeout_seconds = timeout_seconds;
    return RunSimulatedCluster(*platform, platform_spec, communication, options,
                               trace_path, json);
  }
  ASSIGN_OR_RETURN(
      std::vector<std::string> devs,
      tpu ? std::vector<std::string>{} : ReplicaDevices(*platform, replicas));

  std::unique_ptr<distribute::Strategy> strategy;
  if (tpu) {
    ASSIGN_OR_RETURN(
        auto s, MakeTpuStrategy(*platform, replicas, tpu_computation_shape));
    strategy = std::move(s);
  } else if (strategy_name == "one_device") {
    ASSIGN_OR_RETURN(auto s,
                     distribute::OneDeviceStrategy::Create(*platform, devs[0]));
    strategy = std::move(s);
  } else if (strategy_name == "mirrored") {
    ASSIGN_OR_RETURN(auto s,
                     distribute::MirroredStrategy::Create(*platform, devs));
    strategy = std::move(s);
  } else if (strategy_name == "central_storage") {
    ASSIGN_OR_RETURN(
        auto s, distribute::CentralStorageStrategy::Create(*platform, devs));
    strategy = std::move(s);
  } else if (multi_worker) {
    distribute::CommunicationOptions communication;
    if (timeout_seconds > 0) communication.timeout_seconds = timeout_seconds;
    distribute::ServerOptions server_options;
    server_options.tls = tls;
    if (!token_file.empty()) {
      ASSIGN_OR_RETURN(std::string token,
                       distribute::ReadClusterTokenFile(token_file));
      server_options.cluster_token = std::move(token);
    }
    // A worker whose peers are late says so every few seconds.
    distribute::SetWaitReporter([](const std::string& line) {
      std::fprintf(stderr, "distsim train: %s\n", line.c_str());
      std::fflush(stderr);
    });
    // --replicas=0 leaves the choice to the strategy (TF's: the GPUs, else
    // the first CPU); every worker must give the same.
    std::vector<std::string> local;
    if (replicas > 0) local = devs;
    distribute::MultiWorkerMirroredStrategy::Options mw;
    mw.cluster_resolver = std::move(resolver);
    mw.communication = communication;
    mw.server = server_options;
    mw.local_devices = std::move(local);
    ASSIGN_OR_RETURN(auto s, distribute::MultiWorkerMirroredStrategy::Create(
                                 *platform, std::move(mw)));
    // Workers started with different training flags would train to
    // different weights, or fail later without saying why.
    RETURN_IF_ERROR(s->AgreeOnSettings(TrainingFlags(options)));
    strategy = std::move(s);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --strategy=", strategy_name,
                     ": use one_device, mirrored, central_storage, "
                     "multi_worker_mirrored or tpu"));
  }

  std::unique_ptr<StepTimer> timer = MakeStepTimer(*platform);
  const int n = strategy->NumReplicasInSync();
  const std::string worker =
      multi_worker
          ? absl::StrFormat(" (worker %d of %d)", strategy->WorkerIndex(),
                            strategy->NumWorkers())
          : "";
  PrintHeader(*strategy, worker, platform_spec, options);
  std::vector<double> step_us;
  if (timer != nullptr) timer->StartStep();
  ASSIGN_OR_RETURN(
      TrainResult result,
      TrainClassifier(*strategy, options, [&](const StepReport& report) {
        PrintStep(report, options.steps, timer.get(),
                  strategy->extended().WorkerDevices(), step_us);
        return absl::OkStatus();
      }));
  Json workers = Json::object();
  if (multi_worker) {
    workers = {{"worker_index", strategy->WorkerIndex()},
               {"num_workers", strategy->NumWorkers()}};
  }
  return PrintResults(result, step_us, timer.get(), trace_path, platform_spec,
                      json, strategy_name, n, options.steps, workers);
}

}  // namespace distsim
