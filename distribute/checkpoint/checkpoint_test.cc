// Checkpoint: save and restore of plain, mirrored and sync-on-read
// variables, tensors and counters; errors (NOT_FOUND, INVALID_ARGUMENT,
// DATA_LOSS) that leave everything unchanged; non-chief writers.
#include "distribute/checkpoint/checkpoint.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "devices/host_platform.h"
#include "distribute/checkpoint/file_util.h"
#include "distribute/mirrored_strategy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace checkpoint {
namespace {

using devices::Tensor;
using ::testing::HasSubstr;

std::string TestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = JoinPath(tmp == nullptr ? "/tmp" : tmp, name);
  EXPECT_TRUE(DeleteRecursively(dir).ok());
  return dir;
}

Tensor Vec(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return *Tensor::FromVector<float>(v, {n});
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices::HostPlatformOptions options;
    options.num_devices = 2;
    platform_ = *devices::HostPlatform::Create(options);
    strategy_ = *MirroredStrategy::Create(*platform_, {"/cpu:0", "/cpu:1"});
  }

  std::shared_ptr<Variable> Make(
      const std::string& name, Tensor init,
      VariableSynchronization sync = VariableSynchronization::kAuto,
      VariableAggregation agg = VariableAggregation::kMean) {
    ScopeGuard scope = *strategy_->Scope();
    VariableOptions o;
    o.name = name;
    o.synchronization = sync;
    o.aggregation = agg;
    auto v = strategy_->CreateVariable(init, o);
    EXPECT_TRUE(v.ok()) << v.status();
    return *v;
  }

  static void Set(const Variable& v, std::vector<float> values) {
    for (const Tensor& c : v.values()) {
      std::memcpy(c.raw_data(), values.data(), values.size() * sizeof(float));
    }
  }

  std::unique_ptr<devices::HostPlatform> platform_;
  std::unique_ptr<Strategy> strategy_;
};

TEST_F(CheckpointTest, SaveThenRestoreBringsEverythingBack) {
  const std::string dir = TestDir("roundtrip");
  auto w = Make("w", Vec({1, 2, 3}));
  Tensor momentum = Vec({0.5, 0.25});
  int64_t step = 7;
  Checkpoint ckpt;
  ASSERT_TRUE(ckpt.TrackVariable("w", w).ok());
  ASSERT_TRUE(ckpt.TrackTensor("w/momentum", momentum).ok());
  ASSERT_TRUE(ckpt.TrackInt64("step", &step).ok());
  absl::StatusOr<std::string> path = ckpt.Save(JoinPath(dir, "ckpt"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, JoinPath(dir, "ckpt-1"));
  EXPECT_EQ(ckpt.save_counter(), 1);
  EXPECT_EQ(*ckpt.Save(JoinPath(dir, "ckpt")), JoinPath(dir, "ckpt-2"));

  Set(*w, {9, 9, 9});
  momentum.data<float>()[0] = 9;
  step = 99;
  ASSERT_TRUE(ckpt.Restore(*path).ok());
  for (const Tensor& c : w->values()) {
    EXPECT_EQ(c.ToVector<float>(), std::vector<float>({1, 2, 3}));
  }
  EXPECT_EQ(momentum.ToVector<float>(), std::vector<float>({0.5, 0.25}));
  EXPECT_EQ(step, 7);
  EXPECT_EQ(ckpt.save_counter(), 1);  // restored too

  auto listed = ListEntries(*path);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 4u);  // save_counter, step, w, w/momentum
  EXPECT_EQ(LoadEntry(*path, "w")->ToVector<float>(),
            std::vector<float>({1, 2, 3}));
  EXPECT_EQ(LoadEntry(*path, "nope").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CheckpointTest, ReadLeavesTheSaveCounter) {
  const std::string dir = TestDir("read");
  int64_t step = 3;
  Checkpoint ckpt;
  ASSERT_TRUE(ckpt.TrackInt64("step", &step).ok());
  std::string first = *ckpt.Save(JoinPath(dir, "ckpt"));
  ASSERT_TRUE(ckpt.Save(JoinPath(dir, "ckpt")).ok());
  step = 5;
  ASSERT_TRUE(ckpt.Read(first).ok());
  EXPECT_EQ(step, 3);
  EXPECT_EQ(ckpt.save_counter(), 2);
}

TEST_F(CheckpointTest, SyncOnReadSumRestoresTheSumSplitOverReplicas) {
  const std::string dir = TestDir("onread");
  auto total = Make("total", Vec({0, 0}), VariableSynchronization::kOnRead,
                    VariableAggregation::kSum);
  // Replica 0 holds 1,2 and replica 1 holds 3,4: the saved value is 4,6.
  std::memcpy(total->values()[0].raw_data(), Vec({1, 2}).raw_data(), 8);
  std::memcpy(total->values()[1].raw_data(), Vec({3, 4}).raw_data(), 8);
  Checkpoint ckpt;
  ASSERT_TRUE(ckpt.TrackVariable("total", total).ok());
  std::string path = *ckpt.Save(JoinPath(dir, "ckpt"));
  EXPECT_EQ(LoadEntry(path, "total")->ToVector<float>(),
            std::vector<float>({4, 6}));
  ASSERT_TRUE(ckpt.Restore(path).ok());
  for (const Tensor& c : total->values()) {
    EXPECT_EQ(c.ToVector<float>(), std::vector<float>({2, 3}));
  }
  auto read = total->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->ToVector<float>(), std::vector<float>({4, 6}));
}

TEST_F(CheckpointTest, SyncOnReadMeanRestoresEveryReplica) {
  const std::string dir = TestDir("onread_mean");
  auto avg = Make("avg", Vec({0}), VariableSynchronization::kOnRead,
                  VariableAggregation::kMean);
  std::memcpy(avg->values()[0].raw_data(), Vec({1}).raw_data(), 4);
  std::memcpy(avg->values()[1].raw_data(), Vec({3}).raw_data(), 4);
  Checkpoint ckpt;
  ASSERT_TRUE(ckpt.TrackVariable("avg", avg).ok());
  std::string path = *ckpt.Save(JoinPath(dir, "ckpt"));
  ASSERT_TRUE(ckpt.Restore(path).ok());
  for (const Tensor& c : avg->values()) {
    EXPECT_EQ(c.ToVector<float>(), std::vector<float>({2}));
  }
}

TEST_F(CheckpointTest, FailedRestoresChangeNothing) {
  const std::string dir = TestDir("failures");
  auto w = Make("w", Vec({1, 2, 3}));
  auto b = Make("b", Vec({4}));
  int64_t step = 1;
  Checkpoint saver;
  ASSERT_TRUE(saver.TrackVariable("w", w).ok());
  ASSERT_TRUE(saver.TrackVariable("b", b).ok());
  ASSERT_TRUE(saver.TrackInt64("step", &step).ok());
  std::string path = *saver.Save(JoinPath(dir, "ckpt"));
  Set(*w, {7, 7, 7});
  step = 5;

  // A tracked name the file lacks: NOT_FOUND naming it; w untouched.
  int64_t other = 0;
  Checkpoint missing;
  ASSERT_TRUE(missing.TrackVariable("w", w).ok());
  ASSERT_TRUE(missing.TrackInt64("epoch", &other).ok());
  absl::Status s = missing.Restore(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("'epoch'"));
  EXPECT_EQ(w->values()[0].ToVector<float>(), std::vector<float>({7, 7, 7}));

  // A shape that differs: INVALID_ARGUMENT naming the variable.
  auto wide = Make("b", Vec({0, 0}));
  Checkpoint mismatch;
  ASSERT_TRUE(mismatch.TrackVariable("w", w).ok());
  ASSERT_TRUE(mismatch.TrackVariable("b", wide).ok());
  s = mismatch.Restore(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("variable 'b'"));
  EXPECT_EQ(w->values()[0].ToVector<float>(), std::vector<float>({7, 7, 7}));

  // A dtype that differs.
  Tensor ints = *Tensor::FromVector<int32_t>({0}, {1});
  Checkpoint dtype;
  ASSERT_TRUE(dtype.TrackTensor("b", ints).ok());
  EXPECT_EQ(dtype.Restore(path).code(), absl::StatusCode::kInvalidArgument);

  // A corrupt file: DATA_LOSS naming it.
  std::string bytes = *ReadFileToString(path);
  bytes[20] = static_cast<char>(bytes[20] ^ 0x40);
  const std::string bad = JoinPath(dir, "bad");
  ASSERT_TRUE(WriteFileAtomically(bad, bytes).ok());
  s = saver.Restore(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(bad));
  EXPECT_EQ(step, 5);

  // A missing file.
  EXPECT_EQ(saver.Restore(JoinPath(dir, "none")).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(w->values()[1].ToVector<float>(), std::vector<float>({7, 7, 7}));
  EXPECT_EQ(saver.save_counter(), 1);
}

TEST_F(CheckpointTest, TrackingRejectsBadNames) {
  Checkpoint ckpt;
  int64_t step = 0;
  EXPECT_EQ(ckpt.TrackInt64("", &step).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ckpt.TrackInt64("save_counter", &step).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ckpt.TrackInt64("step", nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(ckpt.TrackInt64("step", &step).ok());
  EXPECT_EQ(ckpt.TrackInt64("step", &step).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ckpt.TrackVariable("v", nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CheckpointTest, NonChiefWritesToItsTemporaryDirectoryAndRemovesIt) {
  const std::string dir = TestDir("nonchief");
  int64_t step = 4;
  CheckpointOptions options;
  options.role.is_chief = false;
  options.role.task_id = 1;
  std::vector<std::string> written;
  options.fault_hook = [&](absl::string_view, const std::string& tmp) {
    written.push_back(tmp);
    return absl::OkStatus();
  };
  Checkpoint ckpt(options);
  ASSERT_TRUE(ckpt.TrackInt64("step", &step).ok());
  absl::StatusOr<std::string> path = ckpt.Save(JoinPath(dir, "ckpt"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, JoinPath(dir, "ckpt-1"));  // the chief's name
  ASSERT_EQ(written.size(), 1u);
  EXPECT_THAT(written[0], HasSubstr(JoinPath(dir, "workertemp_1/ckpt-1")));
  EXPECT_FALSE(PathExists(JoinPath(dir, "workertemp_1")));
  EXPECT_FALSE(PathExists(*path));
  EXPECT_EQ(WriteDirectory(dir, options.role), JoinPath(dir, "workertemp_1"));
  EXPECT_EQ(WriteDirectory(dir, WriterRole()), dir);
}

TEST_F(CheckpointTest, LocalStrategyWritesAsChief) {
  auto role = WriterRole::ForStrategy(*strategy_);
  ASSERT_TRUE(role.ok()) << role.status();
  EXPECT_TRUE(role->is_chief);
}

}  // namespace
}  // namespace checkpoint
}  // namespace distribute
