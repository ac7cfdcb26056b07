// The multi-worker example, run as a user runs it: once without TF_CONFIG
// (the simulated cluster in one process), and as two worker processes with
// TF_CONFIG. Every worker learns the data's weight, the same everywhere.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace {

using ::distsim_test::ChildProcess;
using ::distsim_test::Runfile;

constexpr absl::Duration kWait = absl::Seconds(120);

// The w of every "worker I of N: w = W" line.
std::vector<float> Weights(const std::string& out, int workers) {
  std::vector<float> ws;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(line, " w = ");
    EXPECT_EQ(parts.size(), 2u) << line;
    EXPECT_THAT(std::string(line),
                ::testing::HasSubstr(absl::StrCat(" of ", workers, ":")));
    float w = 0;
    if (parts.size() == 2 && absl::SimpleAtof(parts[1], &w)) ws.push_back(w);
  }
  return ws;
}

TEST(MultiWorkerExampleTest, ASimulatedClusterInOneProcess) {
  auto run =
      distsim_test::RunToEnd(Runfile("examples/multi_worker"), {},
                             distsim_test::TestTmpPath("simulated"), kWait);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->ok()) << run->err;
  std::vector<float> ws = Weights(run->out, 2);
  ASSERT_EQ(ws.size(), 2u) << run->out;
  EXPECT_NEAR(ws[0], 3.0f, 1e-3);
  EXPECT_EQ(ws[0], ws[1]);
}

TEST(MultiWorkerExampleTest, TwoWorkerProcessesWithTfConfig) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string cluster =
      absl::StrCat("{\"worker\": [\"127.0.0.1:", (*ports)[0],
                   "\", \"127.0.0.1:", (*ports)[1], "\"]}");
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int w = 0; w < 2; ++w) {
    auto child = ChildProcess::Spawn(
        Runfile("examples/multi_worker"), {},
        {{"TF_CONFIG", distsim_test::TfConfig(cluster, "worker", w)}},
        distsim_test::TestTmpPath(absl::StrCat("worker", w)));
    ASSERT_TRUE(child.ok()) << child.status();
    workers.push_back(*std::move(child));
  }
  std::vector<float> ws;
  for (auto& worker : workers) {
    auto exit = worker->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    ASSERT_TRUE(exit->exited && exit->code == 0) << worker->Stderr();
    std::vector<float> mine = Weights(worker->Stdout(), 2);
    ASSERT_EQ(mine.size(), 1u) << worker->Stdout();
    ws.push_back(mine[0]);
  }
  EXPECT_NEAR(ws[0], 3.0f, 1e-3);
  EXPECT_EQ(ws[0], ws[1]);
}

}  // namespace
