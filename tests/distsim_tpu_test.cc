// `distsim train --strategy=tpu` end to end: the binary trains with
// TPUStrategy on a simulated TPU slice to the weights the library gives.
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "distribute/tpu/device_assignment.h"
#include "distribute/tpu/tpu_strategy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/sim_platform.h"
#include "tests/subprocess.h"
#include "tools/distsim/classifier_training.h"

namespace {

using ::distsim_test::ChildProcess;
using ::distsim_test::ExitInfo;
using ::distsim_test::RunfilePath;
using ::distsim_test::TestTmpPath;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(90);

std::string Distsim() { return RunfilePath("tools/distsim"); }

// The value of "key" in the one-line JSON object `line`.
std::string JsonField(const std::string& line, const std::string& key) {
  const std::string needle = absl::StrCat("\"", key, "\":");
  const size_t at = line.find(needle);
  if (at == std::string::npos) return "";
  const size_t begin = at + needle.size();
  const size_t end = line.find_first_of(",}", begin);
  return std::string(absl::StripSuffix(
      absl::StripPrefix(line.substr(begin, end - begin), "\""), "\""));
}

struct Ran {
  bool ok = false;
  std::string stdout_text;
  std::string stderr_text;
};

Ran RunDistsim(const std::vector<std::string>& args, const std::string& name) {
  Ran ran;
  auto child = ChildProcess::Spawn(Distsim(), args, {}, TestTmpPath(name));
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return ran;
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(kWait);
  EXPECT_TRUE(exit.ok()) << exit.status();
  ran.ok = exit.ok() && exit->exited && exit->code == 0;
  ran.stdout_text = (*child)->Stdout();
  ran.stderr_text = (*child)->Stderr();
  return ran;
}

TEST(DistsimTpuTest, TrainsAChipPerReplicaAsTheLibraryDoes) {
  const Ran ran =
      RunDistsim({"train", "--strategy=tpu", "--tpu_computation_shape=1,1,1,2",
                  "--steps=3", "--global_batch=32", "--json"},
                 "tpu");
  ASSERT_TRUE(ran.ok) << ran.stderr_text;
  EXPECT_THAT(ran.stdout_text,
              HasSubstr("TPUStrategy on sim:tpu_v4:2x2x1, 4 replica(s)"));
  std::vector<std::string> lines =
      absl::StrSplit(ran.stdout_text, '\n', absl::SkipEmpty());
  ASSERT_FALSE(lines.empty());
  const std::string& json = lines.back();
  EXPECT_EQ(JsonField(json, "replicas"), "4");
  EXPECT_NE(JsonField(json, "simulated_step_us"), "null");

  auto slice = simulator::SimPlatform::FromSpec("sim:tpu_v4:2x2x1");
  ASSERT_TRUE(slice.ok()) << slice.status();
  distribute::tpu::DeviceAssignment::BuildOptions build;
  build.computation_shape = {1, 1, 1, 2};
  build.num_replicas = 4;
  distribute::TPUStrategy::Options options;
  options.device_assignment = *distribute::tpu::DeviceAssignment::Build(
      *(*slice)->GetTpuTopology(), build);
  auto strategy = distribute::TPUStrategy::Create(**slice, options);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  distsim::TrainOptions train;
  train.steps = 3;
  train.global_batch = 32;
  auto result = distsim::TrainClassifier(**strategy, train);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(JsonField(json, "weights_checksum"), result->weights_checksum);
}

TEST(DistsimTpuTest, MisusesSayWhatToPass) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--strategy=tpu", "--platform=sim:dgx_h100"},
       "has no TPU mesh"},
      {{"train", "--strategy=tpu", "--tpu_computation_shape=1,1"},
       "four positive counts"},
      {{"train", "--strategy=tpu", "--replicas=9"},
       "requested 9 replicas but only 8"},
      {{"train", "--strategy=mirrored", "--tpu_computation_shape=1,1,1,2"},
       "applies to --strategy=tpu only"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Ran ran = RunDistsim(cases[i].first, absl::StrCat("misuse", i));
    EXPECT_FALSE(ran.ok) << "case " << i;
    EXPECT_THAT(ran.stderr_text, HasSubstr(cases[i].second)) << "case " << i;
  }
}

}  // namespace
