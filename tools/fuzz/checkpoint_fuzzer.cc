// A checkpoint file: this library's safetensors layout, another
// safetensors file, or the earlier version-1 format. Whatever the decoder
// accepts holds entries the encoder takes (named, unique, bools 0 or 1),
// and their encoding reads back as the same entries. (Fuzzing builds skip
// the decoder's CRC checks so that mutated files reach the checks behind
// them.)
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "absl/strings/string_view.h"
#include "devices/dtype.h"
#include "distribute/checkpoint/checkpoint_file.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ckpt = distribute::checkpoint;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  auto entries = ckpt::DecodeCheckpoint(input, "fuzz");
  if (!entries.ok()) return 0;
  std::set<std::string> names;
  for (const ckpt::CheckpointEntry& e : *entries) {
    FUZZ_CHECK(!e.name.empty(), "an entry without a name");
    FUZZ_CHECK(names.insert(e.name).second, "entry '%s' twice", e.name.c_str());
    if (e.value.dtype() == devices::DType::kBool) {
      const auto* bytes = static_cast<const unsigned char*>(e.value.raw_data());
      for (int64_t i = 0; i < e.value.bytes(); ++i) {
        FUZZ_CHECK(bytes[i] <= 1, "bool byte %d in '%s'", bytes[i],
                   e.name.c_str());
      }
    }
  }
  auto bytes = ckpt::EncodeCheckpoint(*entries);
  FUZZ_CHECK(bytes.ok(), "decoded entries the encoder refuses: %s",
             std::string(bytes.status().message()).c_str());
  auto again = ckpt::DecodeCheckpoint(*bytes, "re-encoded");
  FUZZ_CHECK(again.ok() && again->size() == entries->size(),
             "the re-encoded file does not decode");
  for (size_t i = 0; i < entries->size(); ++i) {
    const ckpt::CheckpointEntry& a = (*entries)[i];
    const ckpt::CheckpointEntry& b = (*again)[i];
    FUZZ_CHECK(a.name == b.name && a.value.SameShapeAndType(b.value) &&
                   (a.value.bytes() == 0 ||
                    std::memcmp(a.value.raw_data(), b.value.raw_data(),
                                a.value.bytes()) == 0),
               "entry %zu changed in a round trip", i);
  }
  // The encoding is canonical: encoding what it reads gives it back.
  auto twice = ckpt::EncodeCheckpoint(*again);
  FUZZ_CHECK(twice.ok() && *twice == *bytes, "the encoding is not stable");
  return 0;
}
