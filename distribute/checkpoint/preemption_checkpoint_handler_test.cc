#include "distribute/checkpoint/preemption_checkpoint_handler.h"

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/checkpoint/checkpoint.h"
#include "distribute/checkpoint/checkpoint_manager.h"
#include "distribute/checkpoint/file_util.h"
#include "distribute/context.h"
#include "distribute/in_process_cluster.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/sim_platform.h"

namespace distribute {
namespace {

using devices::Tensor;
using ::testing::HasSubstr;

std::string TestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      checkpoint::JoinPath(tmp == nullptr ? "/tmp" : tmp, name);
  EXPECT_TRUE(checkpoint::DeleteRecursively(dir).ok());
  return dir;
}

Tensor Scalar(float v) { return *Tensor::FromVector<float>({v}, {1}); }

float Value(const Variable& v) { return v.values()[0].data<float>()[0]; }

// A program of `steps` steps that adds step + 1 to a mirrored variable at
// step `step` (so the result depends on which steps ran, and how often), on
// MirroredStrategy over two host devices, checkpointed into `dir`. Its
// handler's watcher fires once `stop_after` steps ran in this process
// (never for a negative value). Returns the variable's final value and the
// handler's state.
struct Outcome {
  absl::Status status;
  float value = 0;
  int64_t resumed_at = 0;
  int64_t run_calls = 0;
  int exits = 0;
};

Outcome TrainOnHost(const std::string& dir, int64_t steps, int stop_after) {
  Outcome out;
  devices::HostPlatformOptions host;
  host.num_devices = 2;
  auto platform = *devices::HostPlatform::Create(host);
  auto strategy = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  std::shared_ptr<Variable> w;
  {
    ScopeGuard scope = *strategy->Scope();
    w = *strategy->CreateVariable(Scalar(0));
  }
  checkpoint::Checkpoint ckpt = *checkpoint::Checkpoint::ForStrategy(*strategy);
  EXPECT_TRUE(ckpt.TrackVariable("w", w).ok());
  int ran_here = 0;
  TerminationConfig config;
  config.termination_watcher = [&] {
    return stop_after >= 0 && ran_here >= stop_after;
  };
  config.exit_fn = [&] { ++out.exits; };
  auto handler =
      PreemptionCheckpointHandler::Create(*strategy, ckpt, dir, config);
  if (!handler.ok()) {
    out.status = handler.status();
    return out;
  }
  out.resumed_at = (*handler)->total_run_calls();
  for (int64_t step = (*handler)->total_run_calls(); step < steps; ++step) {
    out.status = (*handler)->Run([&]() -> absl::Status {
      ++ran_here;
      return w->AssignAdd(Scalar(static_cast<float>(step + 1)));
    });
    if (!out.status.ok()) break;
  }
  out.value = Value(*w);
  out.run_calls = (*handler)->total_run_calls();
  return out;
}

TEST(PreemptionCheckpointHandlerTest, APreemptedRunResumesToTheSameResult) {
  const Outcome whole = TrainOnHost(TestDir("whole"), 10, -1);
  ASSERT_TRUE(whole.status.ok()) << whole.status;
  EXPECT_EQ(whole.value, 55.0f);  // 1 + 2 + ... + 10

  const std::string dir = TestDir("preempted");
  const Outcome first = TrainOnHost(dir, 10, 4);
  EXPECT_EQ(first.status.code(), absl::StatusCode::kAborted) << first.status;
  EXPECT_THAT(std::string(first.status.message()),
              HasSubstr("stopped for preemption after 4 steps"));
  EXPECT_EQ(first.exits, 1);
  EXPECT_EQ(first.run_calls, 4);
  EXPECT_EQ(first.value, 10.0f);  // 1 + 2 + 3 + 4

  const Outcome second = TrainOnHost(dir, 10, -1);
  ASSERT_TRUE(second.status.ok()) << second.status;
  EXPECT_EQ(second.resumed_at, 4);
  EXPECT_EQ(second.run_calls, 10);
  EXPECT_EQ(second.value, whole.value);
}

TEST(PreemptionCheckpointHandlerTest, AfterThePreemptionEveryRunIsAborted) {
  devices::HostPlatformOptions host;
  auto platform = *devices::HostPlatform::Create(host);
  auto strategy = *MirroredStrategy::Create(*platform, {"/cpu:0"});
  checkpoint::Checkpoint ckpt = *checkpoint::Checkpoint::ForStrategy(*strategy);
  TerminationConfig config;
  config.termination_watcher = [] { return true; };
  config.exit_fn = [] {};
  auto handler = *PreemptionCheckpointHandler::Create(
      *strategy, ckpt, TestDir("aborted"), config);
  int steps_run = 0;
  auto step = [&] {
    ++steps_run;
    return absl::OkStatus();
  };
  EXPECT_EQ(handler->Run(step).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(handler->Run(step).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(steps_run, 0);
  ASSERT_TRUE(handler->saved_to().has_value());
  EXPECT_THAT(*handler->saved_to(), HasSubstr("aborted/ckpt-1"));
}

TEST(PreemptionCheckpointHandlerTest, SigtermIsTheDefaultWatcher) {
  devices::HostPlatformOptions host;
  auto platform = *devices::HostPlatform::Create(host);
  auto strategy = *MirroredStrategy::Create(*platform, {"/cpu:0"});
  checkpoint::Checkpoint ckpt = *checkpoint::Checkpoint::ForStrategy(*strategy);
  TerminationConfig config;
  bool exited = false;
  config.exit_fn = [&] { exited = true; };
  auto handler = *PreemptionCheckpointHandler::Create(
      *strategy, ckpt, TestDir("sigterm"), config);
  ASSERT_TRUE(handler->Run([] { return absl::OkStatus(); }).ok());
  ASSERT_EQ(raise(SIGTERM), 0);  // Recorded, not fatal.
  EXPECT_EQ(handler->Run([] { return absl::OkStatus(); }).code(),
            absl::StatusCode::kAborted);
  EXPECT_TRUE(exited);
  EXPECT_EQ(handler->total_run_calls(), 1);
}

// Two workers in one process (two simulated hosts): only worker 1's watcher
// fires, at a step of its own, yet both save after the same step.
TEST(PreemptionCheckpointHandlerTest, WorkersSaveAfterTheSameStep) {
  auto platform = simulator::SimPlatform::Create(
      *simulator::BuiltinTopology("dgx_h100_cluster:2"));
  ASSERT_TRUE(platform.ok()) << platform.status();
  auto cluster = InProcessCluster::Create(**platform);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string dir = TestDir("two_workers");
  absl::Mutex mu;
  std::vector<int64_t> run_calls(2, -1);
  std::vector<std::string> saved(2);
  absl::Status ran =
      (*cluster)->Run([&](MultiWorkerMirroredStrategy& s) -> absl::Status {
        std::shared_ptr<Variable> w;
        {
          ScopeGuard scope = *s.Scope();
          ASSIGN_OR_RETURN(auto made, s.CreateVariable(Scalar(0)));
          w = made;
        }
        ASSIGN_OR_RETURN(auto ckpt, checkpoint::Checkpoint::ForStrategy(s));
        RETURN_IF_ERROR(ckpt.TrackVariable("w", w));
        int ran_here = 0;
        TerminationConfig config;
        const bool watched = s.WorkerIndex() == 1;
        config.termination_watcher = [&] { return watched && ran_here >= 3; };
        config.exit_fn = [] {};
        ASSIGN_OR_RETURN(auto handler, PreemptionCheckpointHandler::Create(
                                           s, ckpt, dir, config));
        absl::Status status;
        for (int step = 0; step < 8 && status.ok(); ++step) {
          status = handler->Run([&] {
            ++ran_here;
            return w->AssignAdd(Scalar(1));
          });
        }
        absl::MutexLock lock(&mu);
        run_calls[s.WorkerIndex()] = handler->total_run_calls();
        saved[s.WorkerIndex()] = handler->saved_to().value_or("");
        return status.code() == absl::StatusCode::kAborted ? absl::OkStatus()
                                                           : status;
      });
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(run_calls[0], 3);
  EXPECT_EQ(run_calls[1], 3);
  EXPECT_EQ(saved[0], saved[1]);
  auto latest = checkpoint::LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ(**latest, saved[0]);
}

TEST(PreemptionCheckpointHandlerTest, MisusesAreRefused) {
  devices::HostPlatformOptions host;
  auto platform = *devices::HostPlatform::Create(host);
  auto strategy = *MirroredStrategy::Create(*platform, {"/cpu:0"});
  checkpoint::Checkpoint ckpt = *checkpoint::Checkpoint::ForStrategy(*strategy);
  EXPECT_EQ(
      PreemptionCheckpointHandler::Create(*strategy, ckpt, "").status().code(),
      absl::StatusCode::kInvalidArgument);

  // A timing-only simulation has no values to save.
  simulator::SimPlatformOptions timing;
  timing.functional = false;
  auto sim = simulator::SimPlatform::Create(
      *simulator::BuiltinTopology("dgx_h100"), timing);
  ASSERT_TRUE(sim.ok()) << sim.status();
  auto on_sim = MirroredStrategy::Create(**sim, (*sim)->DeviceNames());
  ASSERT_TRUE(on_sim.ok()) << on_sim.status();
  checkpoint::Checkpoint sim_ckpt =
      *checkpoint::Checkpoint::ForStrategy(**on_sim);
  absl::StatusOr<std::unique_ptr<PreemptionCheckpointHandler>> refused =
      PreemptionCheckpointHandler::Create(**on_sim, sim_ckpt,
                                          TestDir("timing"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("carries no values"));
}

}  // namespace
}  // namespace distribute
