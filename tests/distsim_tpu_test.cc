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
using ::distsim_test::Runfile;
using ::distsim_test::TestTmpPath;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(90);

std::string Distsim() { return Runfile("tools/distsim/distsim"); }

using ::distsim_test::JsonField;

distsim_test::Finished RunDistsim(const std::vector<std::string>& args,
                                  const std::string& name) {
  absl::StatusOr<distsim_test::Finished> ran =
      distsim_test::RunToEnd(Distsim(), args, TestTmpPath(name), kWait);
  EXPECT_TRUE(ran.ok()) << ran.status();
  return ran.ok() ? *ran : distsim_test::Finished{};
}

TEST(DistsimTpuTest, TrainsAChipPerReplicaAsTheLibraryDoes) {
  const distsim_test::Finished ran =
      RunDistsim({"train", "--strategy=tpu", "--tpu_computation_shape=1,1,1,2",
                  "--steps=3", "--global_batch=32", "--json"},
                 "tpu");
  ASSERT_TRUE(ran.ok()) << ran.err;
  EXPECT_THAT(ran.out,
              HasSubstr("TPUStrategy on sim:tpu_v4:2x2x1, 4 replica(s)"));
  std::vector<std::string> lines =
      absl::StrSplit(ran.out, '\n', absl::SkipEmpty());
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
    const distsim_test::Finished ran =
        RunDistsim(cases[i].first, absl::StrCat("misuse", i));
    EXPECT_FALSE(ran.ok()) << "case " << i;
    EXPECT_THAT(ran.err, HasSubstr(cases[i].second)) << "case " << i;
  }
}

}  // namespace
