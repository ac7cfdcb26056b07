// The checkpoint file format and CRC-32C: round trips, determinism, and
// DATA_LOSS naming file and entry for every kind of damage.
#include "distribute/checkpoint/checkpoint_file.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
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
  // The first entry's data starts right after the header and its size.
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  bytes[8 + header + 5] = static_cast<char>(bytes[8 + header + 5] ^ 0x01);
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

// The safetensors layout, byte for byte: the header's size, the JSON
// header (metadata first, then the entries in order), padding to 8 bytes,
// the data.
TEST(CheckpointFileTest, WritesTheSafetensorsLayout) {
  std::vector<CheckpointEntry> entries = {
      {"w", *devices::Tensor::FromVector<float>({1.5f, -2.0f}, {2})},
      {"step", *devices::Tensor::FromVector<int64_t>({7}, devices::Shape())}};
  const std::string bytes = *EncodeCheckpoint(entries);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  ASSERT_EQ((8 + n) % 8, 0u);
  const std::string header = bytes.substr(8, n);
  const std::string w_crc =
      absl::StrFormat("%08x", Crc32cExtend(0, entries[0].value.raw_data(), 8));
  const std::string step_crc =
      absl::StrFormat("%08x", Crc32cExtend(0, entries[1].value.raw_data(), 8));
  EXPECT_EQ(std::string(absl::StripTrailingAsciiWhitespace(header)),
            absl::StrCat("{\"__metadata__\":{\"distsim\":\"checkpoint 2\","
                         "\"crc32c:w\":\"",
                         w_crc, "\",\"crc32c:step\":\"", step_crc,
                         "\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                         "\"data_offsets\":[0,8]},\"step\":{\"dtype\":"
                         "\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}"));
  EXPECT_EQ(bytes.size(), 8 + n + 16);
  float w[2];
  std::memcpy(w, bytes.data() + 8 + n, 8);
  EXPECT_EQ(w[0], 1.5f);
  EXPECT_EQ(w[1], -2.0f);
}

// A file as Python's safetensors writes it (no metadata of ours, keys
// sorted, data in another order than the keys) is read.
TEST(CheckpointFileTest, ReadsOtherSafetensorsFiles) {
  const std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[4,12]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}";
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += header;
  const unsigned char data[] = {9, 8, 7, 6, 1, 0, 0, 0, 2, 0, 0, 0};
  bytes.append(reinterpret_cast<const char*>(data), sizeof(data));
  auto back = DecodeCheckpoint(bytes, "from_python.safetensors");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].name, "a");
  EXPECT_EQ((*back)[0].value.ToVector<int32_t>(), std::vector<int32_t>({1, 2}));
  EXPECT_EQ((*back)[1].value.ToVector<uint8_t>(),
            std::vector<uint8_t>({9, 8, 7, 6}));

  // Gaps, overlaps and sizes that do not match the shape are not.
  for (const std::string& bad :
       {std::string("[0,8]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
                    "\"data_offsets\":[8,12]}}"),
        std::string("[4,12]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
                    "\"data_offsets\":[2,6]}}"),
        std::string("[4,11]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
                    "\"data_offsets\":[0,4]}}")}) {
    const std::string h =
        "{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":" + bad;
    std::string file(8, '\0');
    const uint64_t size = h.size();
    std::memcpy(file.data(), &size, 8);
    file += h;
    file.append(reinterpret_cast<const char*>(data), sizeof(data));
    // The first layout tiles the data: a byte after it is a gap.
    if (absl::StartsWith(bad, "[0,8]")) file += '\0';
    EXPECT_EQ(DecodeCheckpoint(file, "bad").status().code(),
              absl::StatusCode::kDataLoss)
        << h;
  }
}

// Files of the earlier format (version 1) still restore.
TEST(CheckpointFileTest, ReadsVersion1Files) {
  const std::string v1(
      "\x44\x53\x54\x43\x4b\x50\x54\x0a\x01\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\xc0\x3f\x00\x00\x00\xc0\x07\x00\x00\x00\x00\x00\x00\x00"
      "\x02\x00\x00\x00\x01\x00\x00\x00\x77\x07\x00\x00\x00\x66\x6c\x6f"
      "\x61\x74\x33\x32\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"
      "\x10\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00"
      "\x22\xa9\x32\xa4\x04\x00\x00\x00\x73\x74\x65\x70\x05\x00\x00\x00"
      "\x69\x6e\x74\x36\x34\x00\x00\x00\x00\x18\x00\x00\x00\x00\x00\x00"
      "\x00\x08\x00\x00\x00\x00\x00\x00\x00\x8e\xb7\x71\x76\x20\x00\x00"
      "\x00\x00\x00\x00\x00\x5d\x00\x00\x00\x00\x00\x00\x00\x5a\xa3\xaa"
      "\xe8\x01\x00\x00\x00\x44\x53\x54\x43\x4b\x50\x54\x0a",
      157);
  auto back = DecodeCheckpoint(v1, "old/ckpt-1");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].name, "w");
  EXPECT_EQ((*back)[0].value.ToVector<float>(),
            std::vector<float>({1.5f, -2.0f}));
  EXPECT_EQ((*back)[1].value.data<int64_t>()[0], 7);
}

// An independent reader of the layout (Python's standard library, as
// safetensors' own spec describes it) reads what the encoder writes.
TEST(CheckpointFileTest, PythonReadsTheFile) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(tmp == nullptr ? "/tmp" : tmp) + "/model.safetensors";
  const std::string bytes = *EncodeCheckpoint(Sample());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  const std::string script =
      "import json, struct, sys\n"
      "b = open(sys.argv[1], 'rb').read()\n"
      "n = struct.unpack('<Q', b[:8])[0]\n"
      "h = json.loads(b[8:8 + n])\n"
      "d = b[8 + n:]\n"
      "s, e = h['dense/kernel']['data_offsets']\n"
      "print(h['dense/kernel']['dtype'], h['dense/kernel']['shape'],\n"
      "      list(struct.unpack('<6f', d[s:e])))\n"
      "s, e = h['step']['data_offsets']\n"
      "print(h['step']['dtype'], struct.unpack('<q', d[s:e])[0])\n";
  const std::string command = "python3 -c \"" + script + "\" " + path + " 2>&1";
  std::FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), p) != nullptr) out += buffer;
  ASSERT_EQ(pclose(p), 0) << out;
  EXPECT_EQ(out,
            "F32 [2, 3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]\n"
            "I64 7\n");
}

}  // namespace
}  // namespace checkpoint
}  // namespace distribute
