// Parameters and optimizer slots created as strategy variables.
#include "distribute/models/training_variables.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/host_platform.h"
#include "devices/tensor.h"
#include "distribute/central_storage_strategy.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/models/adam.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/sgd.h"
#include "distribute/one_device_strategy.h"
#include "gtest/gtest.h"

namespace distribute {
namespace models {
namespace {

using devices::Tensor;

class TrainingVariablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices::HostPlatformOptions options;
    options.num_devices = 3;
    platform_ = *devices::HostPlatform::Create(options);
    init_ = {*Tensor::FromVector<float>({1, 2, 3, 4}, devices::Shape({2, 2})),
             *Tensor::FromVector<float>({5, 6}, devices::Shape({2}))};
  }

  std::unique_ptr<devices::HostPlatform> platform_;
  std::vector<std::string> names_ = {"dense/kernel", "dense/bias"};
  std::vector<Tensor> init_;
  ExecutionContext exec_;
};

TEST_F(TrainingVariablesTest, MirroredParamsAndAdamSlotsBesideThem) {
  auto strategy = *MirroredStrategy::Create(*platform_, {"/cpu:0", "/cpu:1"});
  auto adam = *Adam::Create(0.01);
  std::vector<std::string> seen;
  auto state = CreateTrainingVariables(
      *strategy, names_, init_, adam, exec_,
      [&](const std::string& name, const std::shared_ptr<Variable>& v) {
        EXPECT_EQ(v->name(), name);
        seen.push_back(name);
        return absl::OkStatus();
      });
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->params.size(), 2u);
  ASSERT_EQ(state->slots.size(), 2u);
  EXPECT_EQ(seen, (std::vector<std::string>{"dense/kernel", "dense/kernel/m",
                                            "dense/kernel/v", "dense/bias",
                                            "dense/bias/m", "dense/bias/v"}));
  for (size_t i = 0; i < 2; ++i) {
    const Variable& param = *state->params[i];
    EXPECT_EQ(param.kind(), Variable::Kind::kMirrored);
    EXPECT_TRUE(param.trainable());
    EXPECT_EQ(param.aggregation(), VariableAggregation::kMean);
    EXPECT_TRUE(strategy->extended().VariableCreatedInScope(param));
    auto value = param.Read();
    ASSERT_TRUE(value.ok());
    EXPECT_EQ(value->ToVector<float>(), init_[i].ToVector<float>());
    ASSERT_EQ(state->slots[i].size(), 2u);
    for (const auto& slot : state->slots[i]) {
      EXPECT_FALSE(slot->trainable());
      EXPECT_EQ(slot->aggregation(), VariableAggregation::kMean);
      EXPECT_EQ(slot->shape(), param.shape());
      EXPECT_EQ(slot->devices(), param.devices());
      auto zeros = slot->Read();
      ASSERT_TRUE(zeros.ok());
      for (float x : zeros->ToVector<float>()) EXPECT_EQ(x, 0.0f);
    }
  }
}

TEST_F(TrainingVariablesTest, CentralStorageKeepsSlotsWithTheirParameter) {
  auto strategy = *CentralStorageStrategy::Create(
      *platform_, {"/cpu:0", "/cpu:1"}, std::string("/cpu:2"));
  auto sgd = *SGD::Create(0.1, /*momentum=*/0.9);
  auto state = CreateTrainingVariables(*strategy, names_, init_, sgd, exec_);
  ASSERT_TRUE(state.ok()) << state.status();
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(state->slots[i].size(), 1u);
    EXPECT_EQ(state->slots[i][0]->name(), names_[i] + "/momentum");
    EXPECT_EQ(state->slots[i][0]->devices(), state->params[i]->devices());
  }
}

TEST_F(TrainingVariablesTest, PlainSgdHasNoSlots) {
  auto strategy = *OneDeviceStrategy::Create(*platform_, "/cpu:0");
  auto sgd = *SGD::Create(0.1);
  auto state = CreateTrainingVariables(*strategy, names_, init_, sgd, exec_);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->params.size(), 2u);
  for (const auto& slots : state->slots) EXPECT_TRUE(slots.empty());
}

TEST_F(TrainingVariablesTest, MismatchedNamesAreRefused) {
  auto strategy = *OneDeviceStrategy::Create(*platform_, "/cpu:0");
  auto sgd = *SGD::Create(0.1);
  auto state =
      CreateTrainingVariables(*strategy, {names_[0]}, init_, sgd, exec_);
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(state.status().message().find("1 names for 2 initial values"),
            std::string::npos)
      << state.status();
}

TEST_F(TrainingVariablesTest, HookErrorStopsCreation) {
  auto strategy = *OneDeviceStrategy::Create(*platform_, "/cpu:0");
  auto adam = *Adam::Create(0.01);
  int calls = 0;
  auto state = CreateTrainingVariables(
      *strategy, names_, init_, adam, exec_,
      [&](const std::string& name, const std::shared_ptr<Variable>&) {
        ++calls;
        if (name == "dense/kernel/v") {
          return absl::AlreadyExistsError("duplicate " + name);
        }
        return absl::OkStatus();
      });
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(calls, 3);  // kernel, kernel/m, kernel/v; nothing after.
}

}  // namespace
}  // namespace models
}  // namespace distribute
