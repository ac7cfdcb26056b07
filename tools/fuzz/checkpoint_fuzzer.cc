// A checkpoint file. The format is canonical: the decoder accepts exactly
// what the encoder writes, so an accepted file re-encodes to its own bytes.
// (Fuzzing builds skip the decoder's CRC checks; there the CRC fields may
// differ, and everything else must match.)
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
  FUZZ_CHECK(bytes->size() == input.size(),
             "accepted %zu bytes that re-encode to %zu", input.size(),
             bytes->size());
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
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
  // The header and the data, in the encoder's layout, byte for byte (the
  // footer, 32 bytes, starts with the index's offset).
  uint64_t index_offset = 0;
  std::memcpy(&index_offset, bytes->data() + bytes->size() - 32, 8);
  FUZZ_CHECK(input.substr(0, index_offset) ==
                 absl::string_view(*bytes).substr(0, index_offset),
             "the data region differs from the encoder's layout");
#else
  FUZZ_CHECK(*bytes == input,
             "accepted a file the encoder would not write (%zu bytes)",
             input.size());
#endif
  return 0;
}
