// The checkpoint file format and CRC-32C: round trips, determinism, and
// DATA_LOSS naming file and entry for every kind of damage.
#include "distribute/checkpoint/checkpoint_file.h"

#include <string>
#include <vector>

#include "distribute/checkpoint/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace checkpoint {
namespace {

using ::testing::HasSubstr;

TEST(Crc32cTest, KnownValues) {
  // The check value of CRC-32C and RFC 3720's test vectors.
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32cExtend(Crc32c("1234"), "56789"), Crc32c("123456789"));
}

std::vector<CheckpointEntry> Sample() {
  return {
      {"dense/kernel",
       *devices::Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"step", *devices::Tensor::FromVector<int64_t>({7}, devices::Shape())},
      {"empty", *devices::Tensor::FromVector<double>({}, {0, 4})},
  };
}

TEST(CheckpointFileTest, RoundTripsEveryEntry) {
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(Sample());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto back = DecodeCheckpoint(*bytes, "f");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].name, "dense/kernel");
  EXPECT_EQ((*back)[0].value.shape(), devices::Shape({2, 3}));
  EXPECT_EQ((*back)[0].value.ToVector<float>(),
            std::vector<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((*back)[1].value.dtype(), devices::DType::kInt64);
  EXPECT_EQ((*back)[1].value.shape().rank(), 0);
  EXPECT_EQ((*back)[1].value.data<int64_t>()[0], 7);
  EXPECT_EQ((*back)[2].value.shape(), devices::Shape({0, 4}));
  EXPECT_EQ((*back)[2].value.dtype(), devices::DType::kFloat64);
}

TEST(CheckpointFileTest, EncodingIsDeterministic) {
  EXPECT_EQ(*EncodeCheckpoint(Sample()), *EncodeCheckpoint(Sample()));
}

TEST(CheckpointFileTest, RejectsDuplicateAndEmptyNames) {
  std::vector<CheckpointEntry> twice = Sample();
  twice.push_back(twice[0]);
  EXPECT_EQ(EncodeCheckpoint(twice).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<CheckpointEntry> unnamed = {{"", Sample()[0].value}};
  EXPECT_EQ(EncodeCheckpoint(unnamed).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CheckpointFileTest, EveryTruncationIsDataLoss) {
  const std::string bytes = *EncodeCheckpoint(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DecodeCheckpoint(absl::string_view(bytes).substr(0, n), "/d/c-1");
    ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << n;
    EXPECT_THAT(r.status().message(), HasSubstr("/d/c-1"));
  }
}

TEST(CheckpointFileTest, EveryFlippedByteIsDetected) {
  const std::string bytes = *EncodeCheckpoint(Sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    auto r = DecodeCheckpoint(bad, "f");
    // A flipped version byte is an unknown version; the rest is DATA_LOSS.
    EXPECT_TRUE(r.status().code() == absl::StatusCode::kDataLoss ||
                r.status().code() == absl::StatusCode::kUnimplemented)
        << "byte " << i << ": " << r.status();
  }
}

TEST(CheckpointFileTest, CorruptDataNamesTheEntry) {
  std::string bytes = *EncodeCheckpoint(Sample());
  // The first entry's data starts right after the 16-byte header.
  bytes[16 + 5] = static_cast<char>(bytes[16 + 5] ^ 0x01);
  auto r = DecodeCheckpoint(bytes, "/d/ckpt-3");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("/d/ckpt-3"));
  EXPECT_THAT(r.status().message(), HasSubstr("'dense/kernel'"));
}

TEST(CheckpointFileTest, NotACheckpointIsDataLoss) {
  auto r = DecodeCheckpoint(std::string(100, 'x'), "junk");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("magic"));
}

}  // namespace
}  // namespace checkpoint
}  // namespace distribute
