// Restart from checkpoint across real processes: two ckpt_worker processes
// (TF_CONFIG on 127.0.0.1) train with a CheckpointManager saving every 2
// steps. A run that stops (cleanly, or because a worker is killed, or
// because the chief is killed in the middle of writing a checkpoint) is
// resumed by a new cluster from the latest checkpoint and must reach the
// uninterrupted run's weights bit for bit. The previous checkpoint must
// survive a save that crashed, and non-chief temporary directories must be
// gone. Every child is reaped and every wait is bounded.
#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "distribute/checkpoint/checkpoint.h"
#include "distribute/checkpoint/checkpoint_manager.h"
#include "distribute/checkpoint/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/multi_worker_test_util.h"
#include "tests/subprocess.h"

namespace {

namespace ckpt = distribute::checkpoint;
using ::distsim_test::ChildProcess;
using ::distsim_test::ExitInfo;
using ::distsim_test::Runfile;
using ::distsim_test::TestTmpPath;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(60);
constexpr int64_t kSteps = 6;

std::string WorkerBinary() { return Runfile("tests/ckpt_worker"); }

std::string TfConfig(const std::vector<int>& ports, int index) {
  return absl::StrCat(
      "{\"cluster\": {\"worker\": [\"127.0.0.1:", ports[0],
      "\", \"127.0.0.1:", ports[1],
      "\"]}, \"task\": {\"type\": \"worker\", \"index\": ", index, "}}");
}

// Starts a two-worker cluster over `dir`; args[w] are worker w's extra flags.
std::vector<std::unique_ptr<ChildProcess>> StartCluster(
    const std::string& run, const std::string& dir,
    const std::vector<std::vector<std::string>>& extra) {
  std::vector<std::unique_ptr<ChildProcess>> children;
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  EXPECT_TRUE(ports.ok()) << ports.status();
  if (!ports.ok()) return children;
  for (int w = 0; w < 2; ++w) {
    std::vector<std::string> args = {
        absl::StrCat("--steps=", kSteps), "--save_every=2",
        absl::StrCat("--ckpt_dir=", dir),
        absl::StrCat("--weights_out=",
                     TestTmpPath(absl::StrCat(run, "_w", w)))};
    args.insert(args.end(), extra[w].begin(), extra[w].end());
    auto child = ChildProcess::Spawn(WorkerBinary(), args,
                                     {{"TF_CONFIG", TfConfig(*ports, w)}},
                                     TestTmpPath(absl::StrCat(run, "_log", w)));
    EXPECT_TRUE(child.ok()) << child.status();
    if (child.ok()) children.push_back(*std::move(child));
  }
  return children;
}

// Runs a cluster to completion; returns worker 0's weights (checking that
// both workers succeeded and agree) and the workers' stdout in `logs`.
std::vector<float> RunToEnd(const std::string& run, const std::string& dir,
                            std::vector<std::string>* logs = nullptr) {
  auto children = StartCluster(run, dir, {{}, {}});
  EXPECT_EQ(children.size(), 2u);
  std::vector<std::vector<float>> weights;
  for (size_t w = 0; w < children.size(); ++w) {
    absl::StatusOr<ExitInfo> exit = children[w]->Wait(kWait);
    EXPECT_TRUE(exit.ok()) << exit.status();
    if (!exit.ok()) return {};
    EXPECT_TRUE(exit->exited && exit->code == 0)
        << run << " worker " << w << " failed:\n"
        << children[w]->Stderr();
    if (logs != nullptr) logs->push_back(children[w]->Stdout());
    auto read =
        distsim_test::ReadWeights(TestTmpPath(absl::StrCat(run, "_w", w)));
    EXPECT_TRUE(read.ok()) << read.status();
    weights.push_back(read.ok() ? *read : std::vector<float>{});
  }
  if (weights.size() != 2) return {};
  EXPECT_EQ(weights[0], weights[1]);
  return weights[0];
}

// The uninterrupted run's weights, computed once.
const std::vector<float>& Uninterrupted() {
  static const std::vector<float>* weights = [] {
    const std::string dir = TestTmpPath("uninterrupted_ckpt");
    EXPECT_TRUE(ckpt::DeleteRecursively(dir).ok());
    return new std::vector<float>(RunToEnd("uninterrupted", dir));
  }();
  return *weights;
}

void ExpectNoWorkerTemp(const std::string& dir) {
  auto names = ckpt::ListDirectory(dir);
  ASSERT_TRUE(names.ok()) << names.status();
  for (const std::string& name : *names) {
    EXPECT_FALSE(absl::StartsWith(name, "workertemp_")) << name;
    EXPECT_FALSE(absl::StrContains(name, ckpt::kTempSuffix)) << name;
  }
}

int64_t SavedStep(const std::string& path) {
  auto step = ckpt::LoadEntry(path, "step");
  EXPECT_TRUE(step.ok()) << step.status();
  return step.ok() ? step->data<int64_t>()[0] : -1;
}

TEST(CheckpointRestartTest, UninterruptedRunKeepsTheNewestCheckpoints) {
  ASSERT_FALSE(Uninterrupted().empty());
  const std::string dir = TestTmpPath("uninterrupted_ckpt");
  auto all = ckpt::CheckpointsInDirectory(dir);
  ASSERT_TRUE(all.ok()) << all.status();
  // Saves after steps 2, 4, 6 are ckpt-1..3; max_to_keep 2 keeps two.
  EXPECT_EQ(*all, std::vector<std::string>({ckpt::JoinPath(dir, "ckpt-2"),
                                            ckpt::JoinPath(dir, "ckpt-3")}));
  EXPECT_FALSE(ckpt::PathExists(ckpt::JoinPath(dir, "ckpt-1")));
  EXPECT_EQ(SavedStep(all->back()), kSteps);
  ExpectNoWorkerTemp(dir);
}

TEST(CheckpointRestartTest, CleanStopThenRestartReachesUninterruptedWeights) {
  const std::string dir = TestTmpPath("clean_ckpt");
  ASSERT_TRUE(ckpt::DeleteRecursively(dir).ok());
  auto first = StartCluster("clean1", dir,
                            {{"--stop_after_step=4"}, {"--stop_after_step=4"}});
  ASSERT_EQ(first.size(), 2u);
  for (int w = 0; w < 2; ++w) {
    absl::StatusOr<ExitInfo> exit = first[w]->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    ASSERT_TRUE(exit->exited && exit->code == 0) << first[w]->Stderr();
  }
  ExpectNoWorkerTemp(dir);
  std::vector<std::string> logs;
  const std::vector<float> resumed = RunToEnd("clean2", dir, &logs);
  ASSERT_EQ(logs.size(), 2u);
  for (int w = 0; w < 2; ++w) {
    EXPECT_THAT(logs[w], HasSubstr(absl::StrCat("worker ", w, " restored ", dir,
                                                "/ckpt-2 at step 4")));
  }
  ASSERT_FALSE(Uninterrupted().empty());
  EXPECT_EQ(resumed, Uninterrupted());  // bit for bit
  ExpectNoWorkerTemp(dir);
}

TEST(CheckpointRestartTest,
     KilledWorkerThenRestartReachesUninterruptedWeights) {
  const std::string dir = TestTmpPath("killed_ckpt");
  ASSERT_TRUE(ckpt::DeleteRecursively(dir).ok());
  auto first = StartCluster("killed1", dir, {{}, {"--die_after_step=4"}});
  ASSERT_EQ(first.size(), 2u);
  absl::StatusOr<ExitInfo> dead = first[1]->Wait(kWait);
  ASSERT_TRUE(dead.ok()) << dead.status();
  EXPECT_FALSE(dead->exited);
  EXPECT_EQ(dead->signal, SIGKILL);
  absl::StatusOr<ExitInfo> survivor = first[0]->Wait(kWait);
  ASSERT_TRUE(survivor.ok()) << survivor.status();
  EXPECT_TRUE(survivor->exited);
  EXPECT_EQ(survivor->code, 1);
  EXPECT_THAT(first[0]->Stderr(), HasSubstr("UNAVAILABLE"));
  auto latest = ckpt::LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ(SavedStep(**latest), 4);

  const std::vector<float> resumed = RunToEnd("killed2", dir);
  ASSERT_FALSE(Uninterrupted().empty());
  EXPECT_EQ(resumed, Uninterrupted());
  ExpectNoWorkerTemp(dir);
}

TEST(CheckpointRestartTest, ChiefKilledWhileSavingKeepsThePreviousCheckpoint) {
  const std::string dir = TestTmpPath("torn_ckpt");
  ASSERT_TRUE(ckpt::DeleteRecursively(dir).ok());
  auto first = StartCluster("torn1", dir, {{"--die_during_save=4"}, {}});
  ASSERT_EQ(first.size(), 2u);
  absl::StatusOr<ExitInfo> chief = first[0]->Wait(kWait);
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_FALSE(chief->exited);
  EXPECT_EQ(chief->signal, SIGKILL);
  absl::StatusOr<ExitInfo> other = first[1]->Wait(kWait);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->exited);
  EXPECT_EQ(other->code, 1);

  // The torn save left its temporary file; the state file still names the
  // save of step 2, which restores.
  auto names = ckpt::ListDirectory(dir);
  ASSERT_TRUE(names.ok()) << names.status();
  bool has_temp = false;
  for (const std::string& name : *names) {
    has_temp |= absl::StartsWith(name, "ckpt-2.tmp-");
  }
  EXPECT_TRUE(has_temp) << "the killed save's temporary file is missing";
  EXPECT_FALSE(ckpt::PathExists(ckpt::JoinPath(dir, "ckpt-2")));
  auto latest = ckpt::LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ(**latest, ckpt::JoinPath(dir, "ckpt-1"));
  EXPECT_EQ(SavedStep(**latest), 2);

  const std::vector<float> resumed = RunToEnd("torn2", dir);
  ASSERT_FALSE(Uninterrupted().empty());
  EXPECT_EQ(resumed, Uninterrupted());
  ExpectNoWorkerTemp(dir);  // the new chief removed the torn temp file
}

}  // namespace
