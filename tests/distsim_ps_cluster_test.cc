// `distsim train --strategy=parameter_server` as a cluster of processes, the
// binary itself: a chief, two workers and a ps task on 127.0.0.1, each with
// its TF_CONFIG, train the classifier asynchronously (the loss falls from
// chance to well below it) and every process exits when the chief is done;
// a chief whose tasks never come up says which one after its
// --startup_timeout_seconds; a task started with other training flags is
// named and every process still exits; tasks that a parameter-server
// cluster does not have are refused naming them. Every child is waited for
// with a deadline and reaped.
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace {

using ::distsim_test::ChildProcess;
using ::distsim_test::JsonField;
using ::distsim_test::Runfile;
using ::distsim_test::TestTmpPath;
using ::distsim_test::TfConfig;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(120);

std::string Distsim() { return Runfile("tools/distsim/distsim"); }

// {"chief": [...], "worker": [...], "ps": [...]} on the given ports.
std::string Cluster(const std::vector<int>& ports, int workers, int ps) {
  auto address = [&](size_t i) {
    return absl::StrCat("\"127.0.0.1:", ports[i], "\"");
  };
  std::string out = absl::StrCat("{\"chief\": [", address(0), "]");
  absl::StrAppend(&out, ", \"worker\": [");
  for (int w = 0; w < workers; ++w) {
    absl::StrAppend(&out, w == 0 ? "" : ", ", address(1 + w));
  }
  absl::StrAppend(&out, "], \"ps\": [");
  for (int p = 0; p < ps; ++p) {
    absl::StrAppend(&out, p == 0 ? "" : ", ", address(1 + workers + p));
  }
  absl::StrAppend(&out, "]}");
  return out;
}

std::vector<std::string> TrainArgs(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"train", "--strategy=parameter_server",
                                   "--steps=80", "--global_batch=64", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The losses of the chief's step lines ("step   3/80  loss 2.301234").
std::vector<double> StepLosses(const std::string& out) {
  std::vector<double> losses;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!absl::StartsWith(line, "step ")) continue;
    const size_t at = line.find("loss ");
    double loss = 0;
    if (at != absl::string_view::npos &&
        absl::SimpleAtod(line.substr(at + 5), &loss)) {
      losses.push_back(loss);
    }
  }
  return losses;
}

// The chief first, its tasks after it: the chief waits for them, trains,
// and ends them; all four exit 0.
TEST(DistsimPsClusterTest, ChiefWorkersAndPsTrainAndAllExit) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(4);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster = Cluster(*ports, 2, 1);
  auto chief = ChildProcess::Spawn(
      Distsim(), TrainArgs(), {{"TF_CONFIG", TfConfig(cluster, "chief", 0)}},
      TestTmpPath("ps_chief"));
  ASSERT_TRUE(chief.ok()) << chief.status();
  std::vector<std::unique_ptr<ChildProcess>> tasks;
  for (const auto& [type, index] : std::vector<std::pair<std::string, int>>{
           {"worker", 0}, {"worker", 1}, {"ps", 0}}) {
    auto task = ChildProcess::Spawn(
        Distsim(), TrainArgs(), {{"TF_CONFIG", TfConfig(cluster, type, index)}},
        TestTmpPath(absl::StrCat("ps_", type, index)));
    ASSERT_TRUE(task.ok()) << task.status();
    tasks.push_back(*std::move(task));
  }
  absl::StatusOr<distsim_test::ExitInfo> chief_exit = (*chief)->Wait(kWait);
  ASSERT_TRUE(chief_exit.ok()) << chief_exit.status();
  EXPECT_TRUE(chief_exit->exited && chief_exit->code == 0)
      << (*chief)->Stderr();
  for (auto& task : tasks) {
    absl::StatusOr<distsim_test::ExitInfo> exit = task->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_TRUE(exit->exited && exit->code == 0) << task->Stderr();
    EXPECT_THAT(task->Stderr(), HasSubstr("the chief is done"));
  }
  const std::string out = (*chief)->Stdout();
  const std::vector<double> losses = StepLosses(out);
  ASSERT_EQ(losses.size(), 80u) << out;
  // Asynchronous: the losses vary from run to run, but start near chance
  // (ln 10 = 2.3 for 10 classes) and end well below it.
  double last = 0;
  for (size_t i = losses.size() - 10; i < losses.size(); ++i) {
    last += losses[i] / 10;
  }
  EXPECT_GT(losses[0], 2.0);
  EXPECT_LT(last, 1.8) << out;
  ASSERT_NE(out.rfind("{\""), std::string::npos) << out;
  const std::string json = out.substr(out.rfind("{\""));
  EXPECT_EQ(JsonField(json, "strategy"), "parameter_server") << json;
  EXPECT_EQ(JsonField(json, "steps"), "80") << json;
}

// A chief whose tasks never start names the first it waited for.
TEST(DistsimPsClusterTest, AChiefWithoutItsTasksSaysWhichOne) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(3);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster = Cluster(*ports, 1, 1);
  absl::StatusOr<distsim_test::Finished> chief = distsim_test::RunToEnd(
      Distsim(), TrainArgs({"--startup_timeout_seconds=1"}),
      TestTmpPath("lonely_chief"), kWait,
      {{"TF_CONFIG", TfConfig(cluster, "chief", 0)}});
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_FALSE(chief->ok());
  EXPECT_THAT(chief->err,
              HasSubstr(absl::StrCat("worker 0 at 127.0.0.1:", (*ports)[1],
                                     " did not come up within 1s")));
}

// A worker started with another --seed: the chief names it and ends every
// task, so all four processes exit.
TEST(DistsimPsClusterTest, ATaskWithOtherFlagsIsNamedAndEveryoneExits) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(4);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster = Cluster(*ports, 2, 1);
  std::vector<std::unique_ptr<ChildProcess>> tasks;
  for (const auto& [type, index] : std::vector<std::pair<std::string, int>>{
           {"worker", 0}, {"worker", 1}, {"ps", 0}}) {
    auto task =
        ChildProcess::Spawn(Distsim(),
                            TrainArgs(type == "worker" && index == 1
                                          ? std::vector<std::string>{"--seed=7"}
                                          : std::vector<std::string>{}),
                            {{"TF_CONFIG", TfConfig(cluster, type, index)}},
                            TestTmpPath(absl::StrCat("flags_", type, index)));
    ASSERT_TRUE(task.ok()) << task.status();
    tasks.push_back(*std::move(task));
  }
  absl::StatusOr<distsim_test::Finished> chief = distsim_test::RunToEnd(
      Distsim(), TrainArgs(), TestTmpPath("flags_chief"), kWait,
      {{"TF_CONFIG", TfConfig(cluster, "chief", 0)}});
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_FALSE(chief->ok());
  EXPECT_THAT(chief->err,
              HasSubstr("worker 1 was started with --seed=7 where the chief "
                        "has --seed=42"));
  for (auto& task : tasks) {
    absl::StatusOr<distsim_test::ExitInfo> exit = task->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_TRUE(exit->exited && exit->code == 0) << task->Stderr();
  }
}

TEST(DistsimPsClusterTest, TasksItCannotHaveAreRefused) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(3);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster = Cluster(*ports, 1, 1);
  absl::StatusOr<distsim_test::Finished> evaluator = distsim_test::RunToEnd(
      Distsim(), TrainArgs(), TestTmpPath("ps_evaluator"), kWait,
      {{"TF_CONFIG", TfConfig(cluster, "evaluator", 0)}});
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();
  EXPECT_FALSE(evaluator->ok());
  EXPECT_THAT(evaluator->err, HasSubstr("tasks are chief (which trains), "
                                        "worker and ps"));
  // A cluster without ps tasks.
  const std::string no_ps =
      absl::StrCat("{\"chief\": [\"127.0.0.1:", (*ports)[0],
                   "\"], \"worker\": [\"127.0.0.1:", (*ports)[1], "\"]}");
  absl::StatusOr<distsim_test::Finished> chief = distsim_test::RunToEnd(
      Distsim(), TrainArgs(), TestTmpPath("ps_no_ps"), kWait,
      {{"TF_CONFIG", TfConfig(no_ps, "chief", 0)}});
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_FALSE(chief->ok());
  EXPECT_THAT(chief->err, HasSubstr("has no ps tasks"));
}

}  // namespace
