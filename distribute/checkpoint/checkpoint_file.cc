#include "distribute/checkpoint/checkpoint_file.h"

#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "distribute/checkpoint/crc32c.h"

namespace distribute {
namespace checkpoint {
namespace {

constexpr absl::string_view kMagic("DSTCKPT\n", 8);
constexpr size_t kHeaderSize = 16;
constexpr size_t kFooterSize = 8 + 8 + 4 + 4 + 8;

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void PutString(std::string& out, absl::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s.data(), s.size());
}

// Reads little-endian fields from a byte range; once a read runs past the
// end, ok() is false and every later read gives 0.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ == bytes_.size(); }
  uint64_t Fixed(int width) {
    if (!ok_ || bytes_.size() - pos_ < static_cast<size_t>(width)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i]))
           << (8 * i);
    }
    pos_ += static_cast<size_t>(width);
    return v;
  }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  std::string String() {
    const uint32_t n = U32();
    if (!ok_ || bytes_.size() - pos_ < n) {
      ok_ = false;
      return "";
    }
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

absl::Status Corrupt(absl::string_view path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(
      "checkpoint file '", path, "' is corrupt or truncated: ", what,
      "; restore from an earlier checkpoint or delete this one"));
}

}  // namespace

absl::StatusOr<std::string> EncodeCheckpoint(
    const std::vector<CheckpointEntry>& entries) {
  std::set<std::string> names;
  for (const CheckpointEntry& e : entries) {
    if (e.name.empty()) {
      return absl::InvalidArgumentError(
          "a checkpoint entry needs a non-empty name");
    }
    if (!names.insert(e.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint entry '", e.name,
                       "' is given twice; names must be unique"));
    }
    if (!e.value.host_accessible() && e.value.bytes() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint entry '", e.name, "' (", e.value.DebugString(),
          ") has no host data; copy it to the host before saving"));
    }
  }
  std::string out(kMagic);
  PutU32(out, kCheckpointFormatVersion);
  PutU32(out, 0);
  std::vector<uint64_t> offsets;
  for (const CheckpointEntry& e : entries) {
    offsets.push_back(out.size());
    if (e.value.bytes() > 0) {
      out.append(static_cast<const char*>(e.value.raw_data()), e.value.bytes());
    }
  }
  std::string index;
  PutU32(index, static_cast<uint32_t>(entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const CheckpointEntry& e = entries[i];
    PutString(index, e.name);
    PutString(index, devices::DTypeName(e.value.dtype()));
    PutU32(index, static_cast<uint32_t>(e.value.shape().rank()));
    for (int64_t d : e.value.shape().dims())
      PutU64(index, static_cast<uint64_t>(d));
    PutU64(index, offsets[i]);
    PutU64(index, e.value.bytes());
    PutU32(index, e.value.bytes() > 0
                      ? Crc32cExtend(0, e.value.raw_data(), e.value.bytes())
                      : Crc32c(""));
  }
  const uint64_t index_offset = out.size();
  out += index;
  PutU64(out, index_offset);
  PutU64(out, index.size());
  PutU32(out, Crc32c(index));
  PutU32(out, kCheckpointFormatVersion);
  out.append(kMagic.data(), kMagic.size());
  return out;
}

// Fuzzing builds (tools/fuzz) skip the CRC checks, so that mutated files
// reach the checks behind them.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kCheckCrcs = false;
#else
constexpr bool kCheckCrcs = true;
#endif

absl::StatusOr<std::vector<CheckpointEntry>> DecodeCheckpoint(
    absl::string_view bytes, absl::string_view path) {
  if (bytes.size() < kHeaderSize + kFooterSize) {
    return Corrupt(path,
                   absl::StrCat("only ", bytes.size(),
                                " bytes, shorter than a header and footer"));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return Corrupt(path, "it does not start with the checkpoint magic");
  }
  if (bytes.substr(bytes.size() - kMagic.size()) != kMagic) {
    return Corrupt(path,
                   "it does not end with the checkpoint magic (truncated?)");
  }
  Reader header(bytes.substr(kMagic.size(), 8));
  const uint32_t version = header.U32();
  if (header.U32() != 0) {
    return Corrupt(path, "the header's reserved field is not zero");
  }
  Reader footer(bytes.substr(bytes.size() - kFooterSize));
  const uint64_t index_offset = footer.U64();
  const uint64_t index_size = footer.U64();
  const uint32_t index_crc = footer.U32();
  const uint32_t footer_version = footer.U32();
  if (version != footer_version) {
    return Corrupt(
        path, absl::StrCat("header version ", version,
                           " differs from footer version ", footer_version));
  }
  if (version != kCheckpointFormatVersion) {
    return absl::UnimplementedError(absl::StrCat(
        "checkpoint file '", path, "' has format version ", version,
        "; this build reads version ", kCheckpointFormatVersion));
  }
  const uint64_t index_end_limit = bytes.size() - kFooterSize;
  if (index_offset < kHeaderSize || index_offset > index_end_limit ||
      index_size > index_end_limit - index_offset ||
      index_offset + index_size != index_end_limit) {
    return Corrupt(path, "the index location in the footer is out of range");
  }
  const absl::string_view index = bytes.substr(index_offset, index_size);
  if (Crc32c(index) != index_crc && kCheckCrcs) {
    return Corrupt(path, "the index's CRC-32C does not match");
  }
  Reader r(index);
  const uint32_t count = r.U32();
  std::vector<CheckpointEntry> entries;
  std::set<std::string> names;
  // The encoder writes the entries' data back to back from the header on,
  // in index order, and the index right after them: any other layout is
  // not one of its files.
  uint64_t next_offset = kHeaderSize;
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    const std::string name = r.String();
    const std::string dtype_name = r.String();
    const uint32_t rank = r.U32();
    if (!r.ok() || rank > 64) break;
    if (name.empty()) {
      return Corrupt(path, absl::StrCat("entry ", i, " has an empty name"));
    }
    if (!names.insert(name).second) {
      return Corrupt(path, absl::StrCat("entry '", name, "' appears twice"));
    }
    std::vector<int64_t> dims;
    for (uint32_t d = 0; d < rank; ++d)
      dims.push_back(static_cast<int64_t>(r.U64()));
    const uint64_t offset = r.U64();
    const uint64_t size = r.U64();
    const uint32_t crc = r.U32();
    if (!r.ok()) break;
    const std::string entry = absl::StrCat("entry '", name, "'");
    absl::StatusOr<devices::DType> dtype = devices::ParseDType(dtype_name);
    if (!dtype.ok() || devices::DTypeName(*dtype) != dtype_name) {
      return Corrupt(
          path, absl::StrCat(entry, " has unknown dtype '", dtype_name, "'"));
    }
    absl::StatusOr<devices::Shape> shape = devices::Shape::Make(dims);
    if (!shape.ok()) {
      return Corrupt(
          path,
          absl::StrCat(entry, " has a bad shape: ", shape.status().message()));
    }
    // num_elements * dtype size, where it fits in the file (no wrap).
    const uint64_t elements = static_cast<uint64_t>(shape->num_elements());
    const uint64_t element_size = devices::DTypeSize(*dtype);
    const bool fits = element_size == 0 ||
                      elements <= (index_offset - kHeaderSize) / element_size;
    if (!fits || size != elements * element_size || offset != next_offset ||
        size > index_offset - offset) {
      return Corrupt(path,
                     absl::StrCat(entry, " has its data out of range (offset ",
                                  offset, ", ", size, " bytes, ", elements,
                                  " elements of ", dtype_name, ")"));
    }
    next_offset += size;
    const absl::string_view data = bytes.substr(offset, size);
    if (Crc32c(data) != crc && kCheckCrcs) {
      return Corrupt(
          path, absl::StrCat(entry, ": its data's CRC-32C does not match"));
    }
    absl::StatusOr<devices::Tensor> value =
        devices::Tensor::Host(*dtype, *shape);
    if (!value.ok()) return value.status();
    if (*dtype == devices::DType::kBool) {
      // A bool is stored as one byte, 0 or 1: any other byte is not a bool.
      for (size_t b = 0; b < data.size(); ++b) {
        if (static_cast<unsigned char>(data[b]) > 1) {
          return Corrupt(
              path,
              absl::StrCat(entry, " holds byte ", static_cast<int>(data[b]),
                           " at element ", b, ", not a bool (0 or 1)"));
        }
      }
    }
    if (size > 0) std::memcpy(value->raw_data(), data.data(), size);
    entries.push_back({name, *std::move(value)});
  }
  if (!r.ok() || !r.done() || entries.size() != count) {
    return Corrupt(path, "the index does not parse");
  }
  if (next_offset != index_offset) {
    return Corrupt(
        path, absl::StrCat("the index starts at ", index_offset,
                           " but the entries' data ends at ", next_offset));
  }
  return entries;
}

}  // namespace checkpoint
}  // namespace distribute
