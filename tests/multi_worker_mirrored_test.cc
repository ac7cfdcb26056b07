// MultiWorkerMirroredStrategy across real processes: 2 to 4 workers
// (mw_worker) on 127.0.0.1, found through TF_CONFIG or a Slurm step's
// variables, train the small classifier and must reach the weights that
// MirroredStrategy reaches in one process with as many replicas; a worker
// that dies, or freezes with its sockets open, makes the others fail fast
// with UNAVAILABLE naming it; a collective past its timeout is
// DEADLINE_EXCEEDED on every worker; a worker's server refuses calls
// without the cluster token and workers of another cluster; a bad TF_CONFIG or
// Slurm environment makes the worker exit non-zero naming the field. Every
// child is reaped (the ChildProcess destructor kills what still runs) and every
// wait is bounded.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "devices/host_platform.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/server/channel.h"
#include "distribute/server/remote_function_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/multi_worker_test_util.h"
#include "tests/subprocess.h"
#include "tools/distsim/classifier_training.h"

namespace {

using ::distsim_test::ChildProcess;
using ::distsim_test::ExitInfo;
using ::distsim_test::Runfile;
using ::distsim_test::TestTmpPath;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kWait = absl::Seconds(60);

std::string WorkerBinary() { return Runfile("tests/mw_worker"); }

std::string Address(int port) {
  return absl::StrCat("\"127.0.0.1:", port, "\"");
}

// TF_CONFIG for `task` of a cluster of an optional chief (ports[0]) and
// workers (the other ports), with `rpc_layer` when it is not empty.
std::string TfConfig(const std::vector<int>& ports, bool with_chief,
                     const std::string& type, int index,
                     const std::string& rpc_layer = "") {
  std::vector<std::string> workers;
  for (size_t i = with_chief ? 1 : 0; i < ports.size(); ++i) {
    workers.push_back(Address(ports[i]));
  }
  std::string cluster =
      absl::StrCat("\"worker\": [", absl::StrJoin(workers, ","), "]");
  if (with_chief) {
    cluster = absl::StrCat("\"chief\": [", Address(ports[0]), "], ", cluster);
  }
  const std::string layer =
      rpc_layer.empty() ? ""
                        : absl::StrCat(", \"rpc_layer\": \"", rpc_layer, "\"");
  return absl::StrCat("{\"cluster\": {", cluster, "}, \"task\": {\"type\": \"",
                      type, "\", \"index\": ", index, "}", layer, "}");
}

// (type, index) of worker w.
std::pair<std::string, int> Task(int w, bool with_chief) {
  if (with_chief)
    return w == 0 ? std::make_pair("chief", 0)
                  : std::make_pair("worker", w - 1);
  return {"worker", w};
}

std::vector<std::unique_ptr<ChildProcess>> StartWorkers(
    const std::string& test, int n, bool with_chief,
    const std::vector<std::vector<std::string>>& args,
    const std::string& rpc_layer = "") {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(n);
  EXPECT_TRUE(ports.ok()) << ports.status();
  std::vector<std::unique_ptr<ChildProcess>> children;
  if (!ports.ok()) return children;
  for (int w = 0; w < n; ++w) {
    auto [type, index] = Task(w, with_chief);
    auto child = ChildProcess::Spawn(
        WorkerBinary(), args[w],
        {{"TF_CONFIG", TfConfig(*ports, with_chief, type, index, rpc_layer)}},
        TestTmpPath(absl::StrCat(test, "_worker", w)));
    EXPECT_TRUE(child.ok()) << child.status();
    if (child.ok()) children.push_back(*std::move(child));
  }
  return children;
}

// The weights MirroredStrategy reaches on `n` host devices of one process.
std::vector<float> MirroredWeights(int n, int64_t steps) {
  devices::HostPlatformOptions options;
  options.num_devices = n;
  auto platform = devices::HostPlatform::Create(options);
  EXPECT_TRUE(platform.ok()) << platform.status();
  auto strategy = distribute::MirroredStrategy::Create(
      **platform, (*platform)->DeviceNames());
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->NumReplicasInSync(), n);
  auto result = distsim::TrainClassifier(**strategy,
                                         distsim_test::SmallClassifier(steps));
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<float> flat;
  if (!result.ok()) return flat;
  for (const devices::Tensor& t : result->weights) {
    const float* p = t.data<float>();
    flat.insert(flat.end(), p, p + t.num_elements());
  }
  return flat;
}

constexpr int64_t kTrainSteps = 4;

// The flags of worker w of `test` that trains and writes its weights.
std::vector<std::string> TrainArgs(const std::string& test, int w,
                                   int local_devices) {
  return {absl::StrCat("--steps=", kTrainSteps),
          absl::StrCat("--local_devices=", local_devices),
          absl::StrCat("--weights_out=",
                       TestTmpPath(absl::StrCat(test, "_w", w, ".bin")))};
}

// Every one of the `n` workers of `test` (started with TrainArgs) exits 0,
// serves `rpc_layer` ("grpc" when empty), and wrote the weights that
// MirroredStrategy reaches on n * local_devices devices of one process.
void ExpectWorkersTrainedLikeMirrored(
    const std::string& test,
    const std::vector<std::unique_ptr<ChildProcess>>& children, int n,
    const std::string& rpc_layer, int local_devices) {
  ASSERT_EQ(children.size(), static_cast<size_t>(n));
  for (int w = 0; w < n; ++w) {
    absl::StatusOr<ExitInfo> exit = children[w]->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    ASSERT_TRUE(exit->exited && exit->code == 0)
        << "worker " << w << " failed:\n"
        << children[w]->Stderr();
    EXPECT_THAT(children[w]->Stdout(),
                HasSubstr(absl::StrCat("worker ", w, " done checksum")));
    // The weights alone cannot tell how many replicas shared the batch.
    EXPECT_THAT(
        children[w]->Stdout(),
        HasSubstr(absl::StrCat("worker ", w, " has ", local_devices, " of ",
                               n * local_devices, " replicas")));
    // The servers speak TF_CONFIG's rpc_layer ("grpc" when it has none),
    // and only grpc+tcp servers open a data port.
    const std::string protocol = rpc_layer.empty() ? "grpc" : rpc_layer;
    EXPECT_THAT(children[w]->Stdout(),
                HasSubstr(absl::StrCat("worker ", w, " serves ", protocol,
                                       ", data port ")));
    EXPECT_EQ(children[w]->Stdout().find(absl::StrCat(
                  "worker ", w, " serves ", protocol, ", data port 0\n")) ==
                  std::string::npos,
              protocol == "grpc+tcp")
        << children[w]->Stdout();
  }
  const std::vector<float> reference =
      MirroredWeights(n * local_devices, kTrainSteps);
  ASSERT_FALSE(reference.empty());
  std::vector<std::vector<float>> weights;
  for (int w = 0; w < n; ++w) {
    auto read = distsim_test::ReadWeights(
        TestTmpPath(absl::StrCat(test, "_w", w, ".bin")));
    ASSERT_TRUE(read.ok()) << read.status();
    weights.push_back(*std::move(read));
  }
  for (int w = 0; w < n; ++w) {
    // Every worker applies the same reduced gradients: identical weights.
    EXPECT_EQ(weights[w], weights[0]) << "worker " << w;
    ASSERT_EQ(weights[w].size(), reference.size());
    // The reduction order may differ from the one-process reduction.
    for (size_t i = 0; i < reference.size(); ++i) {
      ASSERT_NEAR(weights[w][i], reference[i],
                  1e-5 * std::max(1.0f, std::fabs(reference[i])))
          << "worker " << w << " weight " << i;
    }
  }
}

void ExpectTrainedLikeMirrored(const std::string& test, int n, bool with_chief,
                               const std::string& rpc_layer = "",
                               int local_devices = 1) {
  std::vector<std::vector<std::string>> args;
  for (int w = 0; w < n; ++w) args.push_back(TrainArgs(test, w, local_devices));
  auto children = StartWorkers(test, n, with_chief, args, rpc_layer);
  ExpectWorkersTrainedLikeMirrored(test, children, n, rpc_layer, local_devices);
}

TEST(MultiWorkerMirroredTest, TwoWorkersReachMirroredWeights) {
  ExpectTrainedLikeMirrored("two", 2, /*with_chief=*/false);
}

TEST(MultiWorkerMirroredTest, ChiefAndTwoWorkersReachMirroredWeights) {
  ExpectTrainedLikeMirrored("three", 3, /*with_chief=*/true);
}

// The most processes the issue asks for: a chief and three workers.
TEST(MultiWorkerMirroredTest, ChiefAndThreeWorkersReachMirroredWeights) {
  ExpectTrainedLikeMirrored("four", 4, /*with_chief=*/true);
}

// Two workers launched as a Slurm step on this host would be (srun sets
// SLURM_PROCID and the step's variables, and no TF_CONFIG): the
// SlurmClusterResolver places them at port_base and port_base + 1.
TEST(MultiWorkerMirroredTest, SlurmStepWorkersReachMirroredWeights) {
  absl::StatusOr<int> base = distsim_test::FreePortRange(2);
  ASSERT_TRUE(base.ok()) << base.status();
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int w = 0; w < 2; ++w) {
    std::vector<std::string> args = TrainArgs("slurm", w, 1);
    args.push_back(absl::StrCat("--slurm_port_base=", *base));
    auto child =
        ChildProcess::Spawn(WorkerBinary(), args,
                            {{"SLURM_PROCID", absl::StrCat(w)},
                             {"SLURM_STEP_NUM_TASKS", "2"},
                             {"SLURM_STEP_NODELIST", "127.0.0.1"},
                             {"SLURM_STEP_TASKS_PER_NODE", "2"}},
                            TestTmpPath(absl::StrCat("slurm_worker", w)));
    ASSERT_TRUE(child.ok()) << child.status();
    children.push_back(*std::move(child));
  }
  ExpectWorkersTrainedLikeMirrored("slurm", children, 2, "", 1);
}

// Two workers of two devices each: 4 replicas, reduced hierarchically
// (within each worker, then across), reach MirroredStrategy's weights on 4
// devices.
TEST(MultiWorkerMirroredTest, WorkersOfTwoDevicesReachMirroredWeights) {
  ExpectTrainedLikeMirrored("two_by_two", 2, /*with_chief=*/false, "",
                            /*local_devices=*/2);
  ExpectTrainedLikeMirrored("two_by_two_tcp", 2, /*with_chief=*/false,
                            "grpc+tcp", /*local_devices=*/2);
}

// TF_CONFIG's rpc_layer "grpc+tcp": the all-reduces' bytes take the TCP
// data plane; the result is the same.
TEST(MultiWorkerMirroredTest, GrpcTcpWorkersReachMirroredWeights) {
  ExpectTrainedLikeMirrored("tcp", 2, /*with_chief=*/false, "grpc+tcp");
}

class DeadWorkerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DeadWorkerTest, DeadWorkerFailsSurvivorWithUnavailable) {
  auto children = StartWorkers(
      absl::StrCat("death", GetParam().empty() ? "" : "_tcp"), 2, false,
      {{"--steps=200"}, {"--steps=200", "--die_after_step=2"}}, GetParam());
  ASSERT_EQ(children.size(), 2u);
  absl::StatusOr<ExitInfo> dead = children[1]->Wait(kWait);
  ASSERT_TRUE(dead.ok()) << dead.status();
  EXPECT_FALSE(dead->exited);
  EXPECT_EQ(dead->signal, SIGKILL);
  // The survivor notices within a few heartbeats, not a collective timeout.
  absl::StatusOr<ExitInfo> survivor = children[0]->Wait(absl::Seconds(30));
  ASSERT_TRUE(survivor.ok()) << survivor.status();
  EXPECT_TRUE(survivor->exited);
  EXPECT_EQ(survivor->code, 1);
  const std::string err = children[0]->Stderr();
  EXPECT_THAT(err, HasSubstr("UNAVAILABLE"));
  // The dead task is named either by the heartbeat monitor
  // ("/job:worker/task:1") or, when a send to it fails first, by its
  // device ("/job:worker/replica:0/task:1/device:CPU:0").
  EXPECT_THAT(err,
              ::testing::AnyOf(HasSubstr("/job:worker/task:1"),
                               HasSubstr("/job:worker/replica:0/task:1/")));
}

INSTANTIATE_TEST_SUITE_P(RpcLayers, DeadWorkerTest,
                         ::testing::Values("", "grpc+tcp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.empty() ? std::string("grpc")
                                                     : std::string("tcp");
                         });

// TF needs as many devices on every worker; here the three workers have 2,
// 1 and 2. Each numbers the group's replicas by its own count, so before
// the rendezvous compared layouts they waited for each other's messages
// until killed (there is no collective timeout by default). Now every
// worker fails within seconds naming both layouts.
TEST(MultiWorkerMirroredTest, WorkersOfUnequalDeviceCountsFailNamingThem) {
  auto children =
      StartWorkers("unequal", 3, false,
                   {TrainArgs("unequal", 0, 2), TrainArgs("unequal", 1, 1),
                    TrainArgs("unequal", 2, 2)});
  ASSERT_EQ(children.size(), 3u);
  for (int w = 0; w < 3; ++w) {
    absl::StatusOr<ExitInfo> exit = children[w]->Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.ok()) << "worker " << w << ": " << exit.status();
    EXPECT_TRUE(exit->exited && exit->code == 1) << "worker " << w;
    const std::string err = children[w]->Stderr();
    EXPECT_THAT(err, HasSubstr("FAILED_PRECONDITION")) << "worker " << w;
    EXPECT_THAT(err, HasSubstr("has two layouts")) << "worker " << w;
    EXPECT_THAT(err, HasSubstr("sees 3 ranks (1 on /job:worker/task:0, 1 on "
                               "/job:worker/task:1, 1 on /job:worker/task:2)"))
        << "worker " << w;
    EXPECT_THAT(err, HasSubstr("as many local devices on every worker"))
        << "worker " << w;
  }
}

// A worker that freezes (SIGSTOP) keeps its sockets open, so nothing but
// the heartbeats can tell the others it is gone: each of the three others
// fails with UNAVAILABLE naming it within a few heartbeats, not after the
// collective timeout (10 minutes by default).
TEST(MultiWorkerMirroredTest, FrozenWorkerIsFoundByHeartbeats) {
  constexpr int kWorkers = 4;
  std::vector<std::vector<std::string>> args(kWorkers, {"--steps=200"});
  args[kWorkers - 1].push_back("--freeze_after_step=2");
  auto children = StartWorkers("frozen", kWorkers, false, args);
  ASSERT_EQ(children.size(), static_cast<size_t>(kWorkers));
  const std::string frozen = absl::StrCat("/job:worker/task:", kWorkers - 1);
  for (int w = 0; w < kWorkers - 1; ++w) {
    absl::StatusOr<ExitInfo> exit = children[w]->Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.ok()) << "worker " << w << ": " << exit.status();
    EXPECT_TRUE(exit->exited && exit->code == 1) << "worker " << w;
    const std::string err = children[w]->Stderr();
    EXPECT_THAT(err, HasSubstr("UNAVAILABLE")) << "worker " << w;
    EXPECT_THAT(err, HasSubstr(frozen)) << "worker " << w;
    EXPECT_THAT(err, HasSubstr("heartbeats")) << "worker " << w;
  }
  // The frozen worker never finished on its own.
  EXPECT_THAT(children[kWorkers - 1]->Stdout(), Not(HasSubstr("done")));
  children[kWorkers - 1]->Kill();
}

// The last worker stalls inside a step for longer than the collective
// timeout: the others' all-reduce times out, the first to give up aborts the
// group, and every worker (the staller once it comes back) fails with
// DEADLINE_EXCEEDED.
class CollectiveTimeoutTest : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveTimeoutTest, EveryWorkerFailsWithDeadlineExceeded) {
  const int n = GetParam();
  std::vector<std::vector<std::string>> args(
      n, {"--steps=10", "--timeout_seconds=2"});
  args[n - 1].push_back("--stall_after_step=1");
  args[n - 1].push_back("--stall_seconds=6");
  auto children = StartWorkers(absl::StrCat("timeout", n), n, false, args);
  ASSERT_EQ(children.size(), static_cast<size_t>(n));
  for (int w = 0; w < n; ++w) {
    absl::StatusOr<ExitInfo> exit = children[w]->Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_TRUE(exit->exited) << "worker " << w;
    EXPECT_EQ(exit->code, 1) << "worker " << w;
    const std::string err = children[w]->Stderr();
    EXPECT_THAT(err, HasSubstr("DEADLINE_EXCEEDED")) << "worker " << w;
    EXPECT_THAT(err, Not(HasSubstr("UNAVAILABLE"))) << "worker " << w;
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, CollectiveTimeoutTest,
                         ::testing::Values(2, 3));

// Workers started with a cluster token train as before, and a live
// worker's server refuses a call that lacks the token or carries a wrong one
// (UNAUTHENTICATED) while it admits the right one; a worker that lacks the
// token cannot join the cluster.
TEST(MultiWorkerMirroredTest, ClusterTokenGuardsEveryWorker) {
  const std::string token_file = TestTmpPath("cluster_token");
  {
    std::ofstream out(token_file);
    out << "s3cret-token\n";
  }
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int w = 0; w < 2; ++w) {
    // Both pause after step 1, which keeps the servers up for the probes.
    auto child = ChildProcess::Spawn(
        WorkerBinary(),
        {"--steps=6", "--stall_after_step=1", "--stall_seconds=3",
         absl::StrCat("--cluster_token_file=", token_file),
         absl::StrCat("--weights_out=",
                      TestTmpPath(absl::StrCat("token_w", w)))},
        {{"TF_CONFIG", TfConfig(*ports, false, "worker", w)}},
        TestTmpPath(absl::StrCat("token_worker", w)));
    ASSERT_TRUE(child.ok()) << child.status();
    children.push_back(*std::move(child));
  }
  // Worker 0 prints its protocol once its strategy (and server) is up.
  const absl::Time until = absl::Now() + kWait;
  while (children[0]->Stdout().find("serves") == std::string::npos &&
         absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_THAT(children[0]->Stdout(), HasSubstr("serves"))
      << children[0]->Stderr();
  const std::string target = absl::StrCat("127.0.0.1:", (*ports)[0]);
  auto call = [&](std::optional<std::string> token) {
    distribute::ChannelOptions options;
    options.cluster_token = std::move(token);
    distribute::RemoteFunctionClient client(options);
    return client.Call(target, "no_such_function", {}, absl::Seconds(10))
        .status();
  };
  absl::Status none = call(std::nullopt);
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated) << none;
  absl::Status wrong = call("guess");
  EXPECT_EQ(wrong.code(), absl::StatusCode::kUnauthenticated) << wrong;
  // Admitted: the lookup of the function itself answers.
  absl::Status right = call("s3cret-token");
  EXPECT_EQ(right.code(), absl::StatusCode::kNotFound) << right;
  for (int w = 0; w < 2; ++w) {
    absl::StatusOr<ExitInfo> exit = children[w]->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_TRUE(exit->exited && exit->code == 0) << "worker " << w << ":\n"
                                                 << children[w]->Stderr();
  }
  auto w0 = distsim_test::ReadWeights(TestTmpPath("token_w0"));
  auto w1 = distsim_test::ReadWeights(TestTmpPath("token_w1"));
  ASSERT_TRUE(w0.ok() && w1.ok());
  EXPECT_EQ(*w0, *w1);

  // A worker without the token: the token-holding worker refuses its
  // rendezvous, and it exits naming the refusal.
  absl::StatusOr<std::vector<int>> more = distsim_test::FreePorts(2);
  ASSERT_TRUE(more.ok()) << more.status();
  auto holder = ChildProcess::Spawn(
      WorkerBinary(),
      {"--steps=2", absl::StrCat("--cluster_token_file=", token_file)},
      {{"TF_CONFIG", TfConfig(*more, false, "worker", 0)}},
      TestTmpPath("token_holder"));
  auto outsider =
      ChildProcess::Spawn(WorkerBinary(), {"--steps=2"},
                          {{"TF_CONFIG", TfConfig(*more, false, "worker", 1)}},
                          TestTmpPath("token_outsider"));
  ASSERT_TRUE(holder.ok() && outsider.ok());
  absl::StatusOr<ExitInfo> refused = (*outsider)->Wait(kWait);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_TRUE(refused->exited && refused->code == 1);
  EXPECT_THAT((*outsider)->Stderr(), HasSubstr("UNAUTHENTICATED"));
  (*holder)->Kill();
}

// A worker whose TF_CONFIG gives another cluster but names a live worker's
// address (one TF_CONFIG that disagrees with the others, or a task of
// another job with a different spec on a reused port) is refused by that
// worker's server and exits naming the mismatch, while the cluster it
// dialled trains undisturbed.
TEST(MultiWorkerMirroredTest, WorkerOfAnotherClusterIsRefused) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(3);
  ASSERT_TRUE(ports.ok()) << ports.status();
  // The outsider's cluster is worker 0 of the real one and itself, at a
  // third port. Its rendezvous waits for worker 0, which pauses after step 1
  // for 3 s, so the outsider reaches it while it runs however the processes
  // are scheduled.
  auto outsider = ChildProcess::Spawn(
      WorkerBinary(), {"--steps=2"},
      {{"TF_CONFIG", TfConfig({(*ports)[0], (*ports)[2]}, false, "worker", 1)}},
      TestTmpPath("guarded_outsider"));
  ASSERT_TRUE(outsider.ok()) << outsider.status();
  const std::vector<int> cluster = {(*ports)[0], (*ports)[1]};
  std::vector<std::unique_ptr<ChildProcess>> members;
  for (int w = 0; w < 2; ++w) {
    std::vector<std::string> args = TrainArgs("guarded", w, 1);
    args.push_back("--stall_after_step=1");
    args.push_back("--stall_seconds=3");
    auto child = ChildProcess::Spawn(
        WorkerBinary(), args,
        {{"TF_CONFIG", TfConfig(cluster, false, "worker", w)}},
        TestTmpPath(absl::StrCat("guarded_worker", w)));
    ASSERT_TRUE(child.ok()) << child.status();
    members.push_back(*std::move(child));
  }
  absl::StatusOr<ExitInfo> refused = (*outsider)->Wait(kWait);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_TRUE(refused->exited && refused->code == 1);
  const std::string err = (*outsider)->Stderr();
  EXPECT_THAT(err, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(err, HasSubstr("belongs to another cluster"));
  ExpectWorkersTrainedLikeMirrored("guarded", members, 2, "", 1);
}

// A worker started with `env` (and `args`) exits 1 with `code` and the
// name of the bad `field` in its error.
void ExpectBadEnvironment(
    const std::string& test,
    const std::vector<std::pair<std::string, std::string>>& env,
    const std::string& field, const std::string& code = "INVALID_ARGUMENT",
    std::vector<std::string> args = {}) {
  args.push_back("--steps=1");
  auto child =
      ChildProcess::Spawn(WorkerBinary(), args, env, TestTmpPath(test));
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(kWait);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 1);
  const std::string err = (*child)->Stderr();
  EXPECT_THAT(err, HasSubstr(code));
  EXPECT_THAT(err, HasSubstr(field));
}

void ExpectBadConfig(const std::string& test, const std::string& tf_config,
                     const std::string& field) {
  ExpectBadEnvironment(test, {{"TF_CONFIG", tf_config}}, field);
}

TEST(MultiWorkerMirroredTest, MalformedTfConfigExitsNamingIt) {
  ExpectBadConfig("malformed", "{\"cluster\": {\"worker\": [", "TF_CONFIG");
}

TEST(MultiWorkerMirroredTest, UnknownRpcLayerExitsNamingIt) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  ExpectBadConfig("rpc_layer",
                  TfConfig(*ports, false, "worker", 0, "grpc+rdma"),
                  "(TF_CONFIG's \"rpc_layer\") is \"grpc+rdma\"");
}

// Slurm steps gone wrong: each worker names the variable to fix.
TEST(MultiWorkerMirroredTest, BadSlurmEnvironmentsExitNamingTheVariable) {
  const std::vector<std::pair<std::string, std::string>> step = {
      {"SLURM_PROCID", "0"},
      {"SLURM_STEP_NUM_TASKS", "2"},
      {"SLURM_STEP_NODELIST", "127.0.0.1"},
      {"SLURM_STEP_TASKS_PER_NODE", "2"}};
  auto with = [&](const std::string& name, const std::string& value) {
    std::vector<std::pair<std::string, std::string>> env = step;
    for (auto& [k, v] : env) {
      if (k == name) v = value;
    }
    return env;
  };
  ExpectBadEnvironment("slurm_nodelist",
                       with("SLURM_STEP_NODELIST", "t02n[13-"),
                       "SLURM_STEP_NODELIST");
  ExpectBadEnvironment("slurm_procid", with("SLURM_PROCID", "2"),
                       "SLURM_PROCID");
  ExpectBadEnvironment("slurm_tasks", with("SLURM_STEP_TASKS_PER_NODE", "3"),
                       "SLURM_STEP_TASKS_PER_NODE");
  // Asked for Slurm outside a Slurm step.
  ExpectBadEnvironment("slurm_outside", {}, "SLURM_PROCID",
                       "FAILED_PRECONDITION", {"--cluster_resolver=slurm"});
}

TEST(MultiWorkerMirroredTest, TaskIndexOutOfRangeExitsNamingIt) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  ExpectBadConfig("index", TfConfig(*ports, false, "worker", 5), "index");
}

}  // namespace
