// Tests of Map, Take, Skip, Repeat, Shard and Zip, their cardinalities and
// Dataset::StaticBatchSize.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "distribute/input/dataset.h"
#include "distribute/input/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace data {
namespace {

using testing::DrainScalars;
using ::testing::HasSubstr;
using testing::Int64s;
using testing::Values;

Dataset Infinite() {
  return Dataset::FromGenerator(
      [](int64_t i) -> absl::StatusOr<std::optional<Element>> {
        return std::optional<Element>(Element{Int64s({i})});
      },
      kInfiniteCardinality);
}

Dataset Unknown(int64_t n) {
  return Dataset::FromGenerator(
      [n](int64_t i) -> absl::StatusOr<std::optional<Element>> {
        if (i >= n) return std::nullopt;
        return std::optional<Element>(Element{Int64s({i})});
      });
}

TEST(MapTest, TransformsEveryElement) {
  Dataset ds = Dataset::Range(4).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t v = Values(e[0])[0];
    return Element{Int64s({v * v}), Int64s({-v})};
  });
  EXPECT_EQ(ds.Cardinality(), 4);
  EXPECT_EQ(DrainScalars(ds), (std::vector<int64_t>{0, 1, 4, 9}));
}

TEST(MapTest, ErrorsComeFromGetNextInOrder) {
  Dataset ds = Dataset::Range(4).Map([](Element e) -> absl::StatusOr<Element> {
    if (Values(e[0])[0] == 2) return absl::OutOfRangeError("2 is too big");
    return e;
  });
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  EXPECT_EQ(Values((**it->GetNext())[0])[0], 0);
  EXPECT_EQ(Values((**it->GetNext())[0])[0], 1);
  absl::StatusOr<std::optional<Element>> bad = it->GetNext();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(bad.status().message(), "2 is too big");
  EXPECT_EQ(Values((**it->GetNext())[0])[0], 3);
  EXPECT_FALSE(it->GetNext()->has_value());
}

TEST(TakeTest, FirstElements) {
  EXPECT_EQ(DrainScalars(Dataset::Range(10).Take(3)),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(DrainScalars(Dataset::Range(3).Take(10)),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(DrainScalars(Dataset::Range(3).Take(-1)),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(DrainScalars(Dataset::Range(3).Take(0)).empty());
  EXPECT_EQ(DrainScalars(Infinite().Take(2)), (std::vector<int64_t>{0, 1}));
}

TEST(TakeTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Take(3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(3).Take(10).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(3).Take(-1).Cardinality(), 3);
  EXPECT_EQ(Infinite().Take(5).Cardinality(), 5);
  EXPECT_EQ(Infinite().Take(-1).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Unknown(4).Take(2).Cardinality(), kUnknownCardinality);
}

TEST(SkipTest, DropsTheFirstElements) {
  EXPECT_EQ(DrainScalars(Dataset::Range(5).Skip(3)),
            (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(DrainScalars(Dataset::Range(5).Skip(9)).empty());
  EXPECT_TRUE(DrainScalars(Dataset::Range(5).Skip(-1)).empty());
  EXPECT_EQ(DrainScalars(Dataset::Range(3).Skip(0)),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Dataset::Range(5).Skip(3).Cardinality(), 2);
  EXPECT_EQ(Dataset::Range(5).Skip(9).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(5).Skip(-1).Cardinality(), 0);
  EXPECT_EQ(Infinite().Skip(3).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Unknown(3).Skip(1).Cardinality(), kUnknownCardinality);
}

TEST(SkipTest, ReportsErrorsOfSkippedElements) {
  Dataset ds = Dataset::Range(4)
                   .Map([](Element e) -> absl::StatusOr<Element> {
                     if (Values(e[0])[0] == 0) {
                       return absl::InternalError("bad first");
                     }
                     return e;
                   })
                   .Skip(2);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  EXPECT_EQ(it->GetNext().status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(Values((**it->GetNext())[0])[0], 2);
  EXPECT_EQ(Values((**it->GetNext())[0])[0], 3);
  EXPECT_FALSE(it->GetNext()->has_value());
}

TEST(RepeatTest, RepeatsCountTimes) {
  EXPECT_EQ(DrainScalars(Dataset::Range(3).Repeat(2)),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(DrainScalars(Dataset::Range(3).Repeat(0)).empty());
  EXPECT_EQ(DrainScalars(Dataset::Range(2).Repeat().Take(5)),
            (std::vector<int64_t>{0, 1, 0, 1, 0}));
}

TEST(RepeatTest, ForeverOverNothingEnds) {
  // Cardinality says 0 and iteration ends instead of looping.
  Dataset ds = Dataset::Range(0).Repeat();
  EXPECT_EQ(ds.Cardinality(), 0);
  EXPECT_TRUE(DrainScalars(ds).empty());
  Dataset unknown_empty = Unknown(0).Repeat();
  EXPECT_EQ(unknown_empty.Cardinality(), kUnknownCardinality);
  std::unique_ptr<Iterator> it = unknown_empty.MakeIterator();
  EXPECT_FALSE(it->GetNext()->has_value());
  EXPECT_FALSE(it->GetNext()->has_value());
}

TEST(RepeatTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(3).Repeat(4).Cardinality(), 12);
  EXPECT_EQ(Dataset::Range(3).Repeat().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::Range(3).Repeat(-5).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Infinite().Repeat(2).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Unknown(3).Repeat(2).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Unknown(3).Repeat(0).Cardinality(), 0);
}

TEST(ShardTest, ElementIGoesToShardIModN) {
  EXPECT_EQ(DrainScalars(*Dataset::Range(10).Shard(3, 0)),
            (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(DrainScalars(*Dataset::Range(10).Shard(3, 1)),
            (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(DrainScalars(*Dataset::Range(10).Shard(3, 2)),
            (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(DrainScalars(*Dataset::Range(10).Shard(1, 0)).size(), 10u);
  EXPECT_TRUE(DrainScalars(*Dataset::Range(2).Shard(3, 2)).empty());
}

TEST(ShardTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Shard(3, 0)->Cardinality(), 4);
  EXPECT_EQ(Dataset::Range(10).Shard(3, 1)->Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(10).Shard(3, 2)->Cardinality(), 3);
  EXPECT_EQ(Infinite().Shard(2, 1)->Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Unknown(5).Shard(2, 1)->Cardinality(), kUnknownCardinality);
}

TEST(ShardTest, BadArgumentsAreInvalid) {
  absl::StatusOr<Dataset> ds = Dataset::Range(10).Shard(0, 0);
  EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ds.status().message(),
            "Number of shards must be greater than zero (currently "
            "num_shards = 0).");
  ds = Dataset::Range(10).Shard(3, 3);
  EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ds.status().message(),
            "Index must be between 0 and 2 (currently index = 3).");
  EXPECT_EQ(Dataset::Range(10).Shard(3, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShardTest, ErrorsOfOtherShardsElementsAreReported) {
  Dataset ds = *Dataset::Range(4)
                    .Map([](Element e) -> absl::StatusOr<Element> {
                      if (Values(e[0])[0] == 1) {
                        return absl::AbortedError("bad 1");
                      }
                      return e;
                    })
                    .Shard(2, 0);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  EXPECT_EQ(Values((**it->GetNext())[0])[0], 0);
  EXPECT_EQ(it->GetNext().status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(Values((**it->GetNext())[0])[0], 2);
  EXPECT_FALSE(it->GetNext()->has_value());
}

TEST(StaticBatchSizeTest, WalksThroughOpsThatKeepDim0) {
  Dataset batched = *Dataset::Range(100).Batch(8);
  EXPECT_EQ(batched.StaticBatchSize(), 8);
  Dataset through = *(*(*batched.Shuffle(4, 1)).Shard(2, 0)).Prefetch(1);
  through = through.Repeat(2).Take(5).Skip(1);
  EXPECT_EQ(through.StaticBatchSize(), 8);
  // The innermost Batch seen from the end is the last one applied.
  EXPECT_EQ((*batched.Batch(2)).StaticBatchSize(), 2);
  // Map may change dim 0: unknown, as TF's compute_batch_size.
  EXPECT_EQ(batched.Map([](Element e) -> absl::StatusOr<Element> { return e; })
                .StaticBatchSize(),
            -1);
  EXPECT_EQ(Dataset::Range(3).StaticBatchSize(), -1);
  EXPECT_EQ(batched.Rebatch({4})->StaticBatchSize(), -1);
}

// Zip puts the datasets' elements side by side, components in order, and
// ends with the shortest; its cardinality is the shortest input's (unknown
// if any input's is unknown); batched alike, it keeps the batch size.
TEST(ZipTest, SideBySideUntilTheShortestEnds) {
  absl::StatusOr<Dataset> squares = Dataset::Zip(
      {Dataset::Range(5),
       Dataset::Range(3).Map([](Element e) -> absl::StatusOr<Element> {
         const int64_t v = Values(e[0])[0];
         return Element{Int64s({v * v}), Int64s({-v})};
       })});
  ASSERT_TRUE(squares.ok()) << squares.status();
  EXPECT_EQ(squares->Cardinality(), 3);
  std::unique_ptr<Iterator> it = squares->MakeIterator();
  for (int64_t i = 0; i < 3; ++i) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
    ASSERT_EQ((*e)->size(), 3u);
    EXPECT_EQ(Values((**e)[0])[0], i);
    EXPECT_EQ(Values((**e)[1])[0], i * i);
    EXPECT_EQ(Values((**e)[2])[0], -i);
  }
  EXPECT_FALSE(it->GetNext()->has_value());
  EXPECT_FALSE(it->GetNext()->has_value());

  EXPECT_EQ(Dataset::Zip({Infinite(), Dataset::Range(4)})->Cardinality(), 4);
  EXPECT_EQ(Dataset::Zip({Infinite(), Infinite()})->Cardinality(),
            kInfiniteCardinality);
  EXPECT_EQ(Dataset::Zip({Unknown(2), Dataset::Range(4)})->Cardinality(),
            kUnknownCardinality);
  EXPECT_EQ(DrainScalars(*Dataset::Zip({Unknown(2), Dataset::Range(4)})),
            (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(
      Dataset::Zip({*Dataset::Range(8).Batch(4), *Dataset::Range(8).Batch(4)})
          ->StaticBatchSize(),
      4);
  EXPECT_EQ(
      Dataset::Zip({*Dataset::Range(8).Batch(4), *Dataset::Range(8).Batch(2)})
          ->StaticBatchSize(),
      -1);
  absl::StatusOr<Dataset> none = Dataset::Zip({});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ZipTest, AnInputsErrorTakesThePlaceOfItsElement) {
  Dataset failing =
      Dataset::Range(3).Map([](Element e) -> absl::StatusOr<Element> {
        if (Values(e[0])[0] == 1) return absl::DataLossError("bad record 1");
        return e;
      });
  absl::StatusOr<Dataset> zipped = Dataset::Zip({Dataset::Range(3), failing});
  ASSERT_TRUE(zipped.ok());
  std::unique_ptr<Iterator> it = zipped->MakeIterator();
  EXPECT_TRUE((*it->GetNext()).has_value());
  EXPECT_EQ(it->GetNext().status().code(), absl::StatusCode::kDataLoss);
  absl::StatusOr<std::optional<Element>> last = it->GetNext();
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ(Values((**last)[0])[0], 2);
  EXPECT_EQ(Values((**last)[1])[0], 2);
  EXPECT_FALSE(it->GetNext()->has_value());
}

}  // namespace
}  // namespace data
}  // namespace distribute

namespace distribute {
namespace data {
namespace {

std::string Spec(const absl::StatusOr<Dataset>& ds) {
  if (!ds.ok()) return ds.status().ToString();
  absl::StatusOr<ElementSpec> spec = ds->element_spec();
  if (!spec.ok()) return spec.status().ToString();
  return ElementSpecDebugString(*spec);
}

// tf.data's element_spec: sources and structural ops fix it without running
// the pipeline; a Batch that may end partial has an unknown batch dim.
TEST(ElementSpecTest, FromTheOpsAsTfDataGivesIt) {
  EXPECT_EQ(Spec(Dataset::Range(10)), "(int64[])");
  Element rows = {*devices::Tensor::FromVector<float>(
                      std::vector<float>(12, 0.f), devices::Shape({4, 3})),
                  devices::Tensor::FromVector<int32_t>({0, 1, 2, 3})};
  absl::StatusOr<Dataset> slices = Dataset::FromTensorSlices(rows);
  EXPECT_EQ(Spec(slices), "(float32[3], int32[])");
  EXPECT_EQ(Spec(Dataset::FromTensors(rows)), "(float32[4,3], int32[4])");
  EXPECT_EQ(Spec(slices->Batch(3)), "(float32[?,3], int32[?])");
  EXPECT_EQ(Spec(slices->Batch(3, /*drop_remainder=*/true)),
            "(float32[3,3], int32[3])");
  absl::StatusOr<Dataset> batched = slices->Batch(2, true);
  EXPECT_EQ(Spec(batched->Shuffle(4, 1)), "(float32[2,3], int32[2])");
  EXPECT_EQ(Spec(batched->Repeat(3).Take(5).Skip(1).Prefetch(2)),
            "(float32[2,3], int32[2])");
  EXPECT_EQ(Spec(batched->Shard(2, 1)), "(float32[2,3], int32[2])");
  // TF's rebatch rules: a known batch dim that the replicas split evenly
  // is divided; a Rebatch that drops its remainder keeps its size known.
  EXPECT_EQ(Spec(batched->LegacyRebatch(2)), "(float32[1,3], int32[1])");
  EXPECT_EQ(Spec(slices->Batch(3, true)->LegacyRebatch(2)),
            "(float32[?,3], int32[?])");
  EXPECT_EQ(Spec(slices->Batch(3)->Rebatch({2}, /*drop_remainder=*/true)),
            "(float32[2,3], int32[2])");
  EXPECT_EQ(Spec(slices->Batch(3)->Rebatch({2}, /*drop_remainder=*/false)),
            "(float32[?,3], int32[?])");
  EXPECT_EQ(Spec(Dataset::Zip({Dataset::Range(3), *slices})),
            "(int64[], float32[3], int32[])");
}

// C++ cannot trace a Map's function: its spec is that of its first element,
// made once; with no element there is no spec.
TEST(ElementSpecTest, MapsGiveTheSpecOfTheirFirstElement) {
  int calls = 0;
  Dataset mapped =
      Dataset::Range(5).Map([&calls](Element e) -> absl::StatusOr<Element> {
        ++calls;
        const float v = static_cast<float>(e[0].data<int64_t>()[0]);
        return Element{devices::Tensor::FromVector<float>({v, v})};
      });
  EXPECT_EQ(Spec(mapped), "(float32[2])");
  EXPECT_EQ(Spec(mapped.Batch(2)), "(float32[?,2])");
  EXPECT_EQ(calls, 1);
  // A batch dim the function passes through stays unknown where the
  // input's is (TF's None), though the first batch is whole.
  absl::StatusOr<Dataset> partial = Dataset::Range(5).Batch(2);
  ASSERT_TRUE(partial.ok());
  auto identity = [](Element e) -> absl::StatusOr<Element> { return e; };
  EXPECT_EQ(Spec(partial->Map(identity)), "(int64[?])");
  EXPECT_EQ(Spec(Dataset::Range(4).Batch(2, true)->Map(identity)),
            "(int64[2])");
  // A parallel Map runs its function once for the spec, not its threads.
  int parallel_calls = 0;
  absl::StatusOr<Dataset> parallel = Dataset::Range(100).Map(
      [&parallel_calls](Element e) -> absl::StatusOr<Element> {
        ++parallel_calls;
        return e;
      },
      /*num_parallel_calls=*/4);
  ASSERT_TRUE(parallel.ok());
  EXPECT_EQ(Spec(parallel), "(int64[])");
  EXPECT_EQ(parallel_calls, 1);
  // An error is not kept: asked again, the spec is computed again.
  int attempts = 0;
  Dataset flaky =
      Dataset::Range(3).Map([&attempts](Element e) -> absl::StatusOr<Element> {
        if (++attempts == 1) return absl::UnavailableError("not yet");
        return e;
      });
  EXPECT_EQ(flaky.element_spec().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(Spec(flaky), "(int64[])");

  absl::StatusOr<Dataset> empty = Dataset::Range(0, 0, 1);
  absl::StatusOr<ElementSpec> none =
      empty->Map([](Element e) -> absl::StatusOr<Element> { return e; })
          .element_spec();
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("has none"));

  const TensorSpec spec{devices::DType::kFloat32, {kUnknownDim, 2}};
  EXPECT_TRUE(spec.IsCompatibleWith(*devices::Tensor::FromVector<float>(
      {1, 2, 3, 4, 5, 6}, devices::Shape({3, 2}))));
  EXPECT_FALSE(spec.IsCompatibleWith(devices::Tensor::FromVector<float>({1})));
  EXPECT_FALSE(spec.IsCompatibleWith(
      *devices::Tensor::FromVector<int32_t>({1, 2}, devices::Shape({1, 2}))));
}

}  // namespace
}  // namespace data
}  // namespace distribute
