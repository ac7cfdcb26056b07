// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum the
// checkpoint files carry for each entry and for their index, as TensorFlow's
// tensor bundles do. Software, table-driven (Debian's Abseil predates
// absl/crc).
//
// Example:
//   uint32_t crc = distribute::checkpoint::Crc32c("123456789");  // 0xE3069283
//   uint32_t same = Crc32cExtend(Crc32c("1234"), "56789");         // == crc
#ifndef DISTRIBUTE_CHECKPOINT_CRC32C_H_
#define DISTRIBUTE_CHECKPOINT_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace distribute {
namespace checkpoint {

// The CRC-32C of `data`.
uint32_t Crc32c(absl::string_view data);
// The CRC-32C of (the bytes whose CRC-32C is `crc`) followed by `data`.
uint32_t Crc32cExtend(uint32_t crc, absl::string_view data);
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

}  // namespace checkpoint
}  // namespace distribute

#endif  // DISTRIBUTE_CHECKPOINT_CRC32C_H_
