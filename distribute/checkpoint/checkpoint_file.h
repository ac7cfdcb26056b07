// The checkpoint file format: one file per checkpoint, a list of named
// tensors (the values of variables, optimizer slots and counters), in the
// safetensors layout, so that Python's safetensors (or a few lines of numpy)
// reads a trained model:
//
//   u64 (little-endian)  N, the header's size
//   N bytes              the header, a JSON object: per entry, in the
//                        order given, "<name>": {"dtype": "F32", "shape":
//                        [2, 3], "data_offsets": [begin, end]} (offsets
//                        into the data; dtypes F32 F64 F16 BF16 I32 I64 U8
//                        BOOL), and first "__metadata__": {"distsim":
//                        "checkpoint 2", "crc32c:<name>": "<8 hex digits>"
//                        per entry}; spaces pad it so the data starts at a
//                        multiple of 8
//   data                 the entries' bytes back to back, little-endian
//
// Encoding is deterministic: the same entries give the same bytes. The
// decoder also reads other safetensors files (Python's, without our
// metadata: their CRCs are then unchecked) and this library's earlier
// format, version 1 ("DSTCKPT\n" magic, an index and a footer with
// CRC-32Cs).
//
// Example:
//   std::vector<CheckpointEntry> entries = {{"w", w_tensor_copy}};
//   std::string bytes = *EncodeCheckpoint(entries);
//   absl::StatusOr<std::vector<CheckpointEntry>> back =
//       DecodeCheckpoint(bytes, "/ckpt/ckpt-1");
#ifndef DISTRIBUTE_CHECKPOINT_CHECKPOINT_FILE_H_
#define DISTRIBUTE_CHECKPOINT_CHECKPOINT_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/tensor.h"

namespace distribute {
namespace checkpoint {

inline constexpr uint32_t kCheckpointFormatVersion = 2;

struct CheckpointEntry {
  std::string name;
  // A host tensor with data.
  devices::Tensor value;
};

// The file's bytes for `entries`, in the order given. INVALID_ARGUMENT for
// an empty, duplicated or reserved ("__metadata__") name, or a value
// without host data (naming it).
absl::StatusOr<std::string> EncodeCheckpoint(
    const std::vector<CheckpointEntry>& entries);

// Parses and verifies a whole file (`path` is only for messages): every
// entry comes back as a fresh host tensor, in the file's order. DATA_LOSS
// naming the file (and the entry, where one is at fault) for a truncated
// file, a header that does not parse or describes what the data does not
// hold (gaps, overlaps, sizes that do not match), a CRC-32C that does not
// match, a dtype this library does not hold, or a bool byte other than 0
// and 1; UNIMPLEMENTED for a version-1 file of a later version.
absl::StatusOr<std::vector<CheckpointEntry>> DecodeCheckpoint(
    absl::string_view bytes, absl::string_view path);

}  // namespace checkpoint
}  // namespace distribute

#endif  // DISTRIBUTE_CHECKPOINT_CHECKPOINT_FILE_H_
