// `distsim train --strategy=multi_worker_mirrored`, the binary itself:
// two real worker processes on 127.0.0.1 with TF_CONFIG, or as the tasks of
// a Slurm step, reach the weights
// of MirroredStrategy with two replicas and of the same cluster simulated
// in one process (two hosts of one GPU); on the default simulated cluster
// (sim:dgx_h100_cluster:2) it prints simulated step lines and the JSON line
// of the same training that the classifier library gives on an
// InProcessCluster; the misuses get messages that say what to pass. Every
// child is waited for with a deadline and reaped.
#include <signal.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/host_platform.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "distribute/in_process_cluster.h"
#include "distribute/mirrored_strategy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/sim_platform.h"
#include "simulator/topology.h"
#include "simulator/topology_generator.h"
#include "tests/subprocess.h"
#include "tools/distsim/classifier_training.h"

namespace {

using ::distsim_test::ChildProcess;
using ::distsim_test::ExitInfo;
using ::distsim_test::JsonField;
using ::distsim_test::Runfile;
using ::distsim_test::TestTmpPath;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kWait = absl::Seconds(90);
constexpr int64_t kSteps = 3;
constexpr int64_t kGlobalBatch = 32;

std::string Distsim() { return Runfile("tools/distsim/distsim"); }

std::vector<std::string> TrainArgs(std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "train", "--strategy=multi_worker_mirrored",
      absl::StrCat("--steps=", kSteps),
      absl::StrCat("--global_batch=", kGlobalBatch), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string LastLine(const std::string& text) {
  std::vector<std::string> lines =
      absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines.empty() ? "" : lines.back();
}

distsim::TrainOptions Options() {
  distsim::TrainOptions options;
  options.steps = kSteps;
  options.global_batch = kGlobalBatch;
  return options;
}

// Runs `distsim train` as worker w with envs[w] and `extra` flags, with
// `per_worker` host devices as replicas each; each must succeed as worker w
// of 2 with 2 * per_worker replicas. Their JSON lines.
std::vector<std::string> RunTwoWorkers(
    const std::string& test,
    const std::vector<std::vector<std::pair<std::string, std::string>>>& envs,
    const std::vector<std::string>& extra = {}, int per_worker = 1) {
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> args = {absl::StrCat("--platform=host:", per_worker),
                                   absl::StrCat("--replicas=", per_worker),
                                   "--timeout_seconds=60"};
  args.insert(args.end(), extra.begin(), extra.end());
  for (int w = 0; w < 2; ++w) {
    auto child = ChildProcess::Spawn(Distsim(), TrainArgs(args), envs[w],
                                     TestTmpPath(absl::StrCat(test, w)));
    EXPECT_TRUE(child.ok()) << child.status();
    if (!child.ok()) return {};
    workers.push_back(*std::move(child));
  }
  std::vector<std::string> json(2);
  for (int w = 0; w < 2; ++w) {
    absl::StatusOr<ExitInfo> exit = workers[w]->Wait(kWait);
    EXPECT_TRUE(exit.ok()) << exit.status();
    if (!exit.ok()) return {};
    EXPECT_TRUE(exit->exited && exit->code == 0)
        << "worker " << w << " failed:\n"
        << workers[w]->Stderr();
    EXPECT_THAT(workers[w]->Stdout(),
                HasSubstr(absl::StrCat("(worker ", w, " of 2)")));
    json[w] = LastLine(workers[w]->Stdout());
    EXPECT_EQ(JsonField(json[w], "worker_index"), absl::StrCat(w));
    EXPECT_EQ(JsonField(json[w], "num_workers"), "2");
    EXPECT_EQ(JsonField(json[w], "replicas"), absl::StrCat(2 * per_worker));
  }
  EXPECT_EQ(JsonField(json[0], "weights_checksum"),
            JsonField(json[1], "weights_checksum"));
  return json;
}

// The final loss of MirroredStrategy on `n` host devices of one process.
double MirroredLoss(int n = 2) {
  devices::HostPlatformOptions host;
  host.num_devices = n;
  auto platform = devices::HostPlatform::Create(host);
  EXPECT_TRUE(platform.ok()) << platform.status();
  auto mirrored = distribute::MirroredStrategy::Create(
      **platform, (*platform)->DeviceNames());
  EXPECT_TRUE(mirrored.ok()) << mirrored.status();
  auto reference = distsim::TrainClassifier(**mirrored, Options());
  EXPECT_TRUE(reference.ok()) << reference.status();
  return reference.ok() ? *reference->final_loss : NAN;
}

// Inside a Slurm step (srun sets SLURM_PROCID and the step's variables; no
// TF_CONFIG) the workers find each other through the SlurmClusterResolver;
// with --replicas=2 each trains two replicas of its own (4 in all).
TEST(DistsimMultiWorkerTest, SlurmStepWorkersTrainLikeMirrored) {
  absl::StatusOr<int> base = distsim_test::FreePortRange(2);
  ASSERT_TRUE(base.ok()) << base.status();
  std::vector<std::vector<std::pair<std::string, std::string>>> envs;
  for (int w = 0; w < 2; ++w) {
    envs.push_back({{"SLURM_PROCID", absl::StrCat(w)},
                    {"SLURM_STEP_NUM_TASKS", "2"},
                    {"SLURM_STEP_NODELIST", "127.0.0.1"},
                    {"SLURM_STEP_TASKS_PER_NODE", "2"}});
  }
  std::vector<std::string> json = RunTwoWorkers(
      "slurm_worker", envs, {absl::StrCat("--slurm_port_base=", *base)},
      /*per_worker=*/2);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_NEAR(std::strtod(JsonField(json[0], "final_loss").c_str(), nullptr),
              MirroredLoss(4), 1e-5);
}

// Two workers started with different training flags both fail at start,
// naming the flag and both values, instead of training to different
// weights (a different --global_batch) or failing later without saying why.
TEST(DistsimMultiWorkerTest, WorkersWithDifferentFlagsFailNamingTheFlag) {
  struct Case {
    std::string flag;
    std::string worker0;
    std::string worker1;
  };
  const Case cases[] = {
      {"--global_batch", "32", "64"},
      {"--optimizer", "sgd", "adam"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flag);
    absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
    ASSERT_TRUE(ports.ok()) << ports.status();
    const std::string cluster =
        absl::StrCat("{\"worker\": [\"127.0.0.1:", (*ports)[0],
                     "\", \"127.0.0.1:", (*ports)[1], "\"]}");
    std::vector<std::unique_ptr<ChildProcess>> workers;
    for (int w = 0; w < 2; ++w) {
      std::vector<std::string> args = TrainArgs(
          {"--platform=host:1", "--replicas=1", "--timeout_seconds=60",
           absl::StrCat(c.flag, "=", w == 0 ? c.worker0 : c.worker1)});
      auto child = ChildProcess::Spawn(
          Distsim(), args,
          {{"TF_CONFIG",
            absl::StrCat("{\"cluster\": ", cluster,
                         ", \"task\": {\"type\": \"worker\", \"index\": ", w,
                         "}}")}},
          TestTmpPath(absl::StrCat("disagree", w)));
      ASSERT_TRUE(child.ok()) << child.status();
      workers.push_back(*std::move(child));
    }
    for (int w = 0; w < 2; ++w) {
      absl::StatusOr<ExitInfo> exit = workers[w]->Wait(kWait);
      ASSERT_TRUE(exit.ok()) << exit.status();
      EXPECT_TRUE(exit->exited && exit->code == 1) << workers[w]->Stderr();
      const std::string err = workers[w]->Stderr();
      EXPECT_THAT(err, HasSubstr("different settings")) << err;
      EXPECT_THAT(err,
                  HasSubstr(absl::StrCat(c.flag, " is \"",
                                         w == 0 ? c.worker0 : c.worker1, "\"")))
          << err;
      EXPECT_THAT(err, HasSubstr(absl::StrCat(
                           "\"", w == 0 ? c.worker1 : c.worker0, "\"")))
          << err;
      EXPECT_THAT(workers[w]->Stdout(), Not(HasSubstr("step")));
    }
  }
}

// A worker started alone says every few seconds which worker it waits
// for; once that worker starts, both train. (The second worker is started
// only after the first has said so: no timing is assumed.)
TEST(DistsimMultiWorkerTest, AWorkerWaitingForItsPeerSaysSo) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster =
      absl::StrCat("{\"worker\": [\"127.0.0.1:", (*ports)[0],
                   "\", \"127.0.0.1:", (*ports)[1], "\"]}");
  auto env = [&](int w) {
    return std::vector<std::pair<std::string, std::string>>{
        {"TF_CONFIG",
         absl::StrCat("{\"cluster\": ", cluster,
                      ", \"task\": {\"type\": \"worker\", \"index\": ", w,
                      "}}")}};
  };
  const std::vector<std::string> args =
      TrainArgs({"--platform=host:1", "--replicas=1", "--timeout_seconds=60"});
  auto first =
      ChildProcess::Spawn(Distsim(), args, env(0), TestTmpPath("alone0"));
  ASSERT_TRUE(first.ok()) << first.status();
  const absl::Time deadline = absl::Now() + kWait;
  while (!absl::StrContains((*first)->Stderr(), "still waiting for worker") &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  const std::string waiting = (*first)->Stderr();
  EXPECT_THAT(
      waiting,
      HasSubstr("still waiting for worker /job:worker/task:1 (127.0.0.1:"))
      << waiting;
  auto second =
      ChildProcess::Spawn(Distsim(), args, env(1), TestTmpPath("alone1"));
  ASSERT_TRUE(second.ok()) << second.status();
  for (auto* child : {first->get(), second->get()}) {
    absl::StatusOr<ExitInfo> exit = child->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_TRUE(exit->exited && exit->code == 0) << child->Stderr();
    EXPECT_THAT(child->Stdout(), HasSubstr(absl::StrCat("step    ", kSteps)));
  }
}

TEST(DistsimMultiWorkerTest, TwoRealWorkersTrainLikeMirrored) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster =
      absl::StrCat("{\"worker\": [\"127.0.0.1:", (*ports)[0],
                   "\", \"127.0.0.1:", (*ports)[1], "\"]}");
  std::vector<std::vector<std::pair<std::string, std::string>>> envs;
  for (int w = 0; w < 2; ++w) {
    envs.push_back(
        {{"TF_CONFIG", absl::StrCat("{\"cluster\": ", cluster,
                                    ", \"task\": {\"type\": \"worker\", "
                                    "\"index\": ",
                                    w, "}}")}});
  }
  std::vector<std::string> json = RunTwoWorkers("real_worker", envs);
  ASSERT_EQ(json.size(), 2u);
  // Two replicas' sums are the same in either order; the losses match to
  // float32 printing precision.
  EXPECT_NEAR(std::strtod(JsonField(json[0], "final_loss").c_str(), nullptr),
              MirroredLoss(), 1e-6);

  // The same cluster simulated in one process (two hosts of one GPU each)
  // reaches the very same weights: with two replicas every sum has one
  // order.
  simulator::GeneratorOptions generator;
  generator.nodes = 2;
  generator.gpus_per_node = 1;
  generator.nics_per_node = 1;
  auto def = simulator::GenerateTopology(generator);
  ASSERT_TRUE(def.ok()) << def.status();
  auto topology = simulator::Topology::FromDef(*def, "2 hosts x 1 GPU");
  ASSERT_TRUE(topology.ok()) << topology.status();
  auto sim = simulator::SimPlatform::Create(*std::move(topology));
  ASSERT_TRUE(sim.ok()) << sim.status();
  auto in_process = distribute::InProcessCluster::Create(**sim);
  ASSERT_TRUE(in_process.ok()) << in_process.status();
  std::string checksum;
  absl::Status ran =
      (*in_process)
          ->Run(
              [&](distribute::MultiWorkerMirroredStrategy& s) -> absl::Status {
                ASSIGN_OR_RETURN(auto r,
                                 distsim::TrainClassifier(s, Options()));
                if (s.IsChief()) checksum = r.weights_checksum;
                return absl::OkStatus();
              });
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(JsonField(json[0], "weights_checksum"), checksum);
}

// Preemption (TF's PreemptionCheckpointHandler): SIGTERM to one of two
// worker processes makes both save a checkpoint after the same step and
// exit with code 42; the same commands run again resume from it and end
// with the weights of a run that was never interrupted, bit for bit.
// Whatever step the signal lands at, the result is the same.
TEST(DistsimMultiWorkerTest, APreemptedClusterResumesToTheSameWeights) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster =
      absl::StrCat("{\"worker\": [\"127.0.0.1:", (*ports)[0],
                   "\", \"127.0.0.1:", (*ports)[1], "\"]}");
  auto env = [&](int w) {
    return std::vector<std::pair<std::string, std::string>>{
        {"TF_CONFIG", distsim_test::TfConfig(cluster, "worker", w)}};
  };
  const std::string dir = TestTmpPath("preemption_ckpt");
  std::vector<std::string> args = {"train",
                                   "--strategy=multi_worker_mirrored",
                                   "--platform=host:1",
                                   "--replicas=1",
                                   "--steps=300",
                                   "--global_batch=32",
                                   "--timeout_seconds=60",
                                   "--json"};
  // Both workers, with `extra` flags.
  auto start = [&](const std::string& name,
                   const std::vector<std::string>& extra) {
    std::vector<std::string> all = args;
    all.insert(all.end(), extra.begin(), extra.end());
    std::vector<std::unique_ptr<ChildProcess>> workers;
    for (int w = 0; w < 2; ++w) {
      auto child = ChildProcess::Spawn(Distsim(), all, env(w),
                                       TestTmpPath(absl::StrCat(name, w)));
      EXPECT_TRUE(child.ok()) << child.status();
      if (child.ok()) workers.push_back(*std::move(child));
    }
    return workers;
  };
  auto checksums = [&](std::vector<std::unique_ptr<ChildProcess>>& workers) {
    std::vector<std::string> sums;
    for (auto& worker : workers) {
      absl::StatusOr<ExitInfo> exit = worker->Wait(kWait);
      EXPECT_TRUE(exit.ok()) << exit.status();
      EXPECT_TRUE(exit.ok() && exit->exited && exit->code == 0)
          << worker->Stderr();
      sums.push_back(JsonField(LastLine(worker->Stdout()), "weights_checksum"));
    }
    return sums;
  };

  auto whole = start("uninterrupted", {});
  ASSERT_EQ(whole.size(), 2u);
  const std::vector<std::string> expected = checksums(whole);
  ASSERT_FALSE(expected[0].empty());

  auto first = start("preempted", {absl::StrCat("--checkpoint_dir=", dir)});
  ASSERT_EQ(first.size(), 2u);
  // Mid-run: once worker 1 has printed step 10.
  const absl::Time deadline = absl::Now() + kWait;
  while (!absl::StrContains(first[1]->Stdout(), "step   10/") &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(kill(first[1]->pid(), SIGTERM), 0);
  for (auto& worker : first) {
    absl::StatusOr<ExitInfo> exit = worker->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_TRUE(exit->exited && exit->code == 42)
        << "exited " << exit->exited << " code " << exit->code << " signal "
        << exit->signal << "\n"
        << worker->Stderr();
    EXPECT_THAT(worker->Stderr(), HasSubstr("stopping for preemption"));
    EXPECT_THAT(worker->Stdout(), Not(HasSubstr("step  300/300")));
  }

  auto resumed = start("resumed", {absl::StrCat("--checkpoint_dir=", dir)});
  ASSERT_EQ(resumed.size(), 2u);
  const std::vector<std::string> got = checksums(resumed);
  // It resumed rather than starting over, and said so.
  EXPECT_THAT(resumed[0]->Stdout(), Not(HasSubstr("step    1/300")));
  EXPECT_THAT(resumed[0]->Stdout(), HasSubstr("resuming from "));
  EXPECT_EQ(got[0], expected[0]);
  EXPECT_EQ(got[1], expected[0]);
}

// TF's side-car evaluation: an "evaluator" task of TF_CONFIG joins none of
// the workers' collectives; it evaluates the checkpoints they write
// (--checkpoint_every) as they appear, until the last step's, whose
// weights are the workers' final ones.
TEST(DistsimMultiWorkerTest, AnEvaluatorEvaluatesTheWorkersCheckpoints) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(3);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster =
      absl::StrCat("{\"worker\": [\"127.0.0.1:", (*ports)[0],
                   "\", \"127.0.0.1:", (*ports)[1],
                   "\"], \"evaluator\": [\"127.0.0.1:", (*ports)[2], "\"]}");
  auto env = [&](const std::string& type, int index) {
    return std::vector<std::pair<std::string, std::string>>{
        {"TF_CONFIG", distsim_test::TfConfig(cluster, type, index)}};
  };
  const std::string dir = TestTmpPath("evaluated_ckpt");
  const std::vector<std::string> args = {"train",
                                         "--strategy=multi_worker_mirrored",
                                         "--platform=host:1",
                                         "--replicas=1",
                                         "--steps=60",
                                         "--global_batch=32",
                                         "--timeout_seconds=60",
                                         "--json",
                                         absl::StrCat("--checkpoint_dir=", dir),
                                         "--checkpoint_every=20"};
  // The evaluator first: it waits for the workers' checkpoints.
  auto evaluator = ChildProcess::Spawn(Distsim(), args, env("evaluator", 0),
                                       TestTmpPath("evaluator"));
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int w = 0; w < 2; ++w) {
    auto child = ChildProcess::Spawn(Distsim(), args, env("worker", w),
                                     TestTmpPath(absl::StrCat("evaluated", w)));
    ASSERT_TRUE(child.ok()) << child.status();
    workers.push_back(*std::move(child));
  }
  std::string trained;
  for (auto& worker : workers) {
    absl::StatusOr<ExitInfo> exit = worker->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    ASSERT_TRUE(exit->exited && exit->code == 0) << worker->Stderr();
    trained = JsonField(LastLine(worker->Stdout()), "weights_checksum");
  }
  absl::StatusOr<ExitInfo> exit = (*evaluator)->Wait(kWait);
  ASSERT_TRUE(exit.ok()) << exit.status();
  ASSERT_TRUE(exit->exited && exit->code == 0) << (*evaluator)->Stderr();
  const std::string out = (*evaluator)->Stdout();
  EXPECT_THAT(out, HasSubstr("eval  step    60/60"));
  const std::string json = LastLine(out);
  EXPECT_EQ(JsonField(json, "role"), "evaluator");
  EXPECT_EQ(JsonField(json, "final_step"), "60");
  EXPECT_EQ(JsonField(json, "weights_checksum"), trained);
  EXPECT_NE(JsonField(json, "final_eval_loss"), "null");

  // Without the workers' checkpoint directory it says what to give.
  std::vector<std::string> bare(args.begin(), args.end() - 2);
  auto lost =
      distsim_test::RunToEnd(Distsim(), bare, TestTmpPath("evaluator_bare"),
                             kWait, env("evaluator", 0));
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_FALSE(lost->ok());
  EXPECT_THAT(lost->err, HasSubstr("give it their --checkpoint_dir"));
}

TEST(DistsimMultiWorkerTest, SimulatedClusterByDefault) {
  auto child = ChildProcess::Spawn(Distsim(), TrainArgs({}), {},
                                   TestTmpPath("simulated_cluster"));
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(kWait);
  ASSERT_TRUE(exit.ok()) << exit.status();
  ASSERT_TRUE(exit->exited && exit->code == 0) << (*child)->Stderr();
  const std::string out = (*child)->Stdout();
  EXPECT_THAT(out, HasSubstr("2 simulated workers, one per host"));
  EXPECT_THAT(out, HasSubstr("sim:dgx_h100_cluster:2, 16 replica(s)"));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("step    ", kSteps, "/", kSteps)));
  EXPECT_THAT(out, HasSubstr("communication"));
  const std::string json = LastLine(out);
  EXPECT_EQ(JsonField(json, "num_workers"), "2");
  EXPECT_EQ(JsonField(json, "replicas"), "16");
  EXPECT_NE(JsonField(json, "simulated_step_us"), "null");

  // The same training through the library on an in-process cluster.
  simulator::RegisterSimPlatform();
  auto platform = devices::CreatePlatform("sim:dgx_h100_cluster:2");
  ASSERT_TRUE(platform.ok()) << platform.status();
  auto cluster = distribute::InProcessCluster::Create(**platform);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::string checksum;
  absl::Status ran = (*cluster)->Run(
      [&](distribute::MultiWorkerMirroredStrategy& s) -> absl::Status {
        ASSIGN_OR_RETURN(auto r, distsim::TrainClassifier(s, Options()));
        if (s.IsChief()) checksum = r.weights_checksum;
        return absl::OkStatus();
      });
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(JsonField(json, "weights_checksum"), checksum);
}

TEST(DistsimMultiWorkerTest, MisusesSayWhatToPass) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;
    std::string message;
  };
  const std::vector<Case> cases = {
      {TrainArgs({"--platform=host"}), {}, "needs TF_CONFIG"},
      {TrainArgs({"--cluster_resolver=kubernetes"}),
       {},
       "unknown cluster resolver \"kubernetes\""},
      // Slurm asked for outside a Slurm step.
      {TrainArgs({"--cluster_resolver=slurm"}), {}, "SLURM_PROCID"},
      {TrainArgs({}),
       {{"SLURM_PROCID", "0"},
        {"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_STEP_NODELIST", "n[1-"},
        {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}},
       "SLURM_STEP_NODELIST"},
      // A Slurm worker's replicas are its GPUs per task (TF's rule for
      // resolvers other than TF_CONFIG's); a host platform has none.
      {TrainArgs({"--slurm_gpus_per_node=2"}),
       {{"SLURM_PROCID", "0"},
        {"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_STEP_NODELIST", "127.0.0.1"},
        {"SLURM_STEP_TASKS_PER_NODE", "2"}},
       "gives each worker 1 GPU but platform 'host' has 0"},
      {TrainArgs({"--platform=sim:dgx_h100"}), {}, "dgx_h100_cluster"},
      {TrainArgs({"--platform=sim:dgx_h100_cluster:2"}),
       {{"TF_CONFIG", "{\"cluster\": {\"worker\": [\"127.0.0.1:1\"]}}"}},
       "unset TF_CONFIG"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto child = ChildProcess::Spawn(Distsim(), cases[i].args, cases[i].env,
                                     TestTmpPath(absl::StrCat("misuse", i)));
    ASSERT_TRUE(child.ok()) << child.status();
    absl::StatusOr<ExitInfo> exit = (*child)->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_TRUE(exit->exited && exit->code != 0) << "case " << i;
    EXPECT_THAT((*child)->Stderr(), HasSubstr(cases[i].message))
        << "case " << i;
  }
}

}  // namespace
