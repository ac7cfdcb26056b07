// FNV-1a, 64 bits (Fowler, Noll and Vo; parameters from
// http://www.isthe.com/chongo/tech/comp/fnv/): a hash that is the same in
// every process and build, for checksums and fingerprints that processes
// compare (absl::Hash is seeded per process and cannot serve).
//
// Example:
//   uint64_t h = Fnv1a64("{}");        // 0x08f44b07b5901a25
//   h = Fnv1a64(more_bytes, h);         // continues over more input
//   std::string hex = Fnv1a64Hex(h);   // "08f44b07b5901a25"
#ifndef DEVICES_FNV1A_H_
#define DEVICES_FNV1A_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace devices {

inline constexpr uint64_t kFnv1a64Offset = 14695981039346656037ull;
inline constexpr uint64_t kFnv1a64Prime = 1099511628211ull;

// The hash of `data`, continuing from `hash` (the offset basis to start).
inline uint64_t Fnv1a64(absl::string_view data,
                        uint64_t hash = kFnv1a64Offset) {
  for (const char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnv1a64Prime;
  }
  return hash;
}

// `hash` as 16 lowercase hex digits.
inline std::string Fnv1a64Hex(uint64_t hash) {
  return absl::StrFormat("%016x", hash);
}

}  // namespace devices

#endif  // DEVICES_FNV1A_H_
