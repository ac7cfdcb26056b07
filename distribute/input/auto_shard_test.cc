// Tests of the auto-shard rewrite under each policy.

#include "distribute/input/auto_shard.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "distribute/input/dataset.h"
#include "distribute/input/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace data {
namespace {

using testing::DrainScalars;
using testing::DrainValues;
using ::testing::HasSubstr;
using testing::Rows;

// Files "f<k>" of 3 records each: 100k, 100k + 1, 100k + 2.
absl::StatusOr<Dataset> Files(int64_t n) {
  std::vector<std::string> files;
  for (int64_t k = 0; k < n; ++k) files.push_back(absl::StrCat("f", k));
  return Dataset::FromFiles(
      files, [](const std::string& file) -> absl::StatusOr<Dataset> {
        const int64_t base = 100 * std::stoll(file.substr(1));
        return Dataset::Range(base, base + 3, 1);
      });
}

TEST(AutoShardTest, OffAndOneWorkerChangeNothing) {
  Dataset ds = *Dataset::Range(6).Batch(2);
  for (AutoShardPolicy policy :
       {AutoShardPolicy::kOff, AutoShardPolicy::kAuto, AutoShardPolicy::kFile,
        AutoShardPolicy::kData}) {
    absl::StatusOr<Dataset> one = AutoShard(ds, 1, 0, policy, 1);
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(one->DebugString(), ds.DebugString());
  }
  absl::StatusOr<Dataset> off = AutoShard(ds, 3, 2, AutoShardPolicy::kOff, 3);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(DrainValues(*off), (Rows{{0, 1}, {2, 3}, {4, 5}}));
}

TEST(AutoShardTest, DataKeepsEveryWthElement) {
  for (int64_t w = 0; w < 3; ++w) {
    absl::StatusOr<Dataset> mine =
        AutoShard(Dataset::Range(10), 3, w, AutoShardPolicy::kData, 3);
    ASSERT_TRUE(mine.ok()) << mine.status();
    std::vector<int64_t> expected;
    for (int64_t i = w; i < 10; i += 3) expected.push_back(i);
    EXPECT_EQ(DrainScalars(*mine), expected);
  }
}

TEST(AutoShardTest, DataShardsBeforeAFinalPrefetch) {
  Dataset ds = *(*Dataset::Range(8).Batch(2)).Prefetch(2);
  absl::StatusOr<Dataset> mine = AutoShard(ds, 2, 1, AutoShardPolicy::kData, 2);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ(mine->DebugString(),
            "Range(0, 8, 1) -> Batch(2, drop_remainder=false) -> "
            "Shard(2, 1) -> Prefetch(2)");
  EXPECT_EQ(DrainValues(*mine), (Rows{{2, 3}, {6, 7}}));
}

TEST(AutoShardTest, DataTurnsRebatchIntoLegacyRebatch) {
  // G = 8 over 2 workers x 2 replicas: with DATA sharding each global
  // batch is cut into 4 pieces dealt round-robin to the workers.
  Dataset ds =
      *(*(*Dataset::Range(16).Batch(8)).Rebatch({2, 2, 2, 2})).Prefetch(2);
  absl::StatusOr<Dataset> w0 = AutoShard(ds, 2, 0, AutoShardPolicy::kData, 4);
  absl::StatusOr<Dataset> w1 = AutoShard(ds, 2, 1, AutoShardPolicy::kData, 4);
  ASSERT_TRUE(w0.ok() && w1.ok());
  EXPECT_EQ(w0->DebugString(),
            "Range(0, 16, 1) -> Batch(8, drop_remainder=false) -> "
            "LegacyRebatch(4) -> Shard(2, 0) -> Prefetch(2)");
  EXPECT_EQ(DrainValues(*w0), (Rows{{0, 1}, {4, 5}, {8, 9}, {12, 13}}));
  EXPECT_EQ(DrainValues(*w1), (Rows{{2, 3}, {6, 7}, {10, 11}, {14, 15}}));
}

TEST(AutoShardTest, DataWithTooFewElementsFailsAtTheEnd) {
  absl::StatusOr<Dataset> mine =
      AutoShard(Dataset::Range(1), 2, 1, AutoShardPolicy::kData, 2);
  ASSERT_TRUE(mine.ok());
  std::unique_ptr<Iterator> it = mine->MakeIterator();
  absl::StatusOr<std::optional<Element>> next = it->GetNext();
  EXPECT_EQ(next.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(next.status().message(),
              HasSubstr("There aren't enough elements in this dataset for "
                        "each shard to have at least one element (# elems = "
                        "1, # shards = 2)"));
}

TEST(AutoShardTest, FileGivesEachWorkerItsFiles) {
  Dataset ds = *(*Files(5)).Batch(2);
  absl::StatusOr<Dataset> w1 = AutoShard(ds, 2, 1, AutoShardPolicy::kFile, 2);
  ASSERT_TRUE(w1.ok()) << w1.status();
  EXPECT_EQ(w1->DebugString(),
            "Reader(f1, f3) -> Batch(2, drop_remainder=false)");
  EXPECT_EQ(DrainValues(*w1), (Rows{{100, 101}, {102, 300}, {301, 302}}));
  absl::StatusOr<Dataset> w0 = AutoShard(ds, 2, 0, AutoShardPolicy::kFile, 2);
  ASSERT_TRUE(w0.ok());
  EXPECT_EQ(DrainValues(*w0),
            (Rows{{0, 1}, {2, 200}, {201, 202}, {400, 401}, {402}}));
}

TEST(AutoShardTest, FileWalksThroughEveryPassThroughOp) {
  Dataset ds =
      (*Files(4)).Map([](Element e) -> absl::StatusOr<Element> { return e; });
  ds = *(*(*(*ds.Shuffle(4, 1)).Batch(2)).Rebatch({1})).Prefetch(1);
  ds = (*ds.Shard(1, 0)).Repeat(1).Take(100).Skip(0);
  absl::StatusOr<Dataset> w = AutoShard(ds, 4, 3, AutoShardPolicy::kFile, 4);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->DebugString(), HasSubstr("Reader(f3) -> Map"));
}

// FILE sharding of a Zip shards every input's files; a Zip with an input
// that reads no files cannot be sharded by file.
TEST(AutoShardTest, FileShardsEveryInputOfAZip) {
  Dataset ds = *Dataset::Zip({*Files(4), *Files(4)});
  absl::StatusOr<Dataset> w1 = AutoShard(ds, 2, 1, AutoShardPolicy::kFile, 2);
  ASSERT_TRUE(w1.ok()) << w1.status();
  std::unique_ptr<Iterator> it = w1->MakeIterator();
  std::vector<int64_t> left, right;
  while (true) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!e->has_value()) break;
    left.push_back(testing::Values((**e)[0])[0]);
    right.push_back(testing::Values((**e)[1])[0]);
  }
  const std::vector<int64_t> files_1_and_3 = {100, 101, 102, 300, 301, 302};
  EXPECT_EQ(left, files_1_and_3);
  EXPECT_EQ(right, files_1_and_3);
  absl::StatusOr<Dataset> mixed =
      AutoShard(*Dataset::Zip({*Files(4), Dataset::Range(12)}), 2, 1,
                AutoShardPolicy::kFile, 2);
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kNotFound);
}

TEST(AutoShardTest, FileWithoutAReaderIsNotFound) {
  absl::StatusOr<Dataset> w =
      AutoShard(*Dataset::Range(10).Batch(2), 2, 0, AutoShardPolicy::kFile, 2);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(w.status().message(),
              HasSubstr("Found an unshardable source dataset: "
                        "Range(0, 10, 1)"));
}

TEST(AutoShardTest, FileWithFewerFilesThanWorkersIsInvalid) {
  absl::StatusOr<Dataset> w =
      AutoShard(*Files(2), 3, 0, AutoShardPolicy::kFile, 3);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(w.status().message(), HasSubstr("(# elems = 2, # shards = 3)"));
  // AUTO does not fall back to DATA for this error, as in TF.
  EXPECT_EQ(
      AutoShard(*Files(2), 3, 0, AutoShardPolicy::kAuto, 3).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(AutoShardTest, AutoPrefersFilesAndFallsBackToData) {
  absl::StatusOr<Dataset> by_file =
      AutoShard(*Files(4), 2, 1, AutoShardPolicy::kAuto, 2);
  ASSERT_TRUE(by_file.ok());
  EXPECT_EQ(by_file->DebugString(), "Reader(f1, f3)");
  absl::StatusOr<Dataset> by_data =
      AutoShard(Dataset::Range(6), 2, 1, AutoShardPolicy::kAuto, 2);
  ASSERT_TRUE(by_data.ok());
  EXPECT_EQ(DrainScalars(*by_data), (std::vector<int64_t>{1, 3, 5}));
}

TEST(AutoShardTest, InvalidArguments) {
  Dataset ds = Dataset::Range(4);
  absl::StatusOr<Dataset> w = AutoShard(ds, 0, 0, AutoShardPolicy::kData, 1);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message(), "num_workers should be >= 1, currently 0");
  w = AutoShard(ds, 2, 2, AutoShardPolicy::kData, 2);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message(), "index should be >= 0 and < 2, currently 2");
  EXPECT_EQ(AutoShard(ds, 2, 0, AutoShardPolicy::kData, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AutoShardTest, PolicyNames) {
  EXPECT_EQ(AutoShardPolicyName(AutoShardPolicy::kOff), "OFF");
  EXPECT_EQ(AutoShardPolicyName(AutoShardPolicy::kAuto), "AUTO");
  EXPECT_EQ(AutoShardPolicyName(AutoShardPolicy::kFile), "FILE");
  EXPECT_EQ(AutoShardPolicyName(AutoShardPolicy::kData), "DATA");
  EXPECT_EQ(static_cast<int>(AutoShardPolicy::kOff), -1);
  EXPECT_EQ(static_cast<int>(AutoShardPolicy::kData), 2);
}

}  // namespace
}  // namespace data
}  // namespace distribute
