// The checkpoint file format: one self-describing file per checkpoint, a
// list of named tensors (the values of variables, optimizer slots and
// counters). Encoding is deterministic: the same entries give the same
// bytes. All integers are little-endian.
//
//   header   8 bytes magic "DSTCKPT\n", u32 format version (1), u32 reserved
//   (0) data     the entries' bytes back to back, in index order index    u32
//   entry count, then per entry:
//              u32 name length, name bytes (UTF-8),
//              u32 dtype-name length, dtype name ("float32", ...: DTypeName),
//              u32 rank, rank x i64 dims,
//              u64 data offset (from the file start), u64 data size,
//              u32 CRC-32C of the data
//   footer   u64 index offset, u64 index size, u32 CRC-32C of the index,
//            u32 format version, 8 bytes magic
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

inline constexpr uint32_t kCheckpointFormatVersion = 1;

struct CheckpointEntry {
  std::string name;
  // A host tensor with data.
  devices::Tensor value;
};

// The file's bytes for `entries`, in the order given. INVALID_ARGUMENT for
// an empty or duplicated name, or a value without host data (name it).
absl::StatusOr<std::string> EncodeCheckpoint(
    const std::vector<CheckpointEntry>& entries);

// Parses and verifies a whole file (`path` is only for messages): every
// entry comes back as a fresh host tensor. DATA_LOSS naming the file (and
// the entry, where one is at fault) for a truncated file, a bad magic, an
// index or entry whose CRC-32C does not match, or offsets and sizes that do
// not fit; UNIMPLEMENTED for a format version this build does not read.
absl::StatusOr<std::vector<CheckpointEntry>> DecodeCheckpoint(
    absl::string_view bytes, absl::string_view path);

}  // namespace checkpoint
}  // namespace distribute

#endif  // DISTRIBUTE_CHECKPOINT_CHECKPOINT_FILE_H_
